// The one path from CUDA / cuBLAS return codes to ringserve errors. Host code
// never aborts on a CUDA failure: the error travels up as a Status.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "ringserve/common/expected.h"

namespace ringserve::kernels {

inline Status cuda_status(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return ok();
  return make_error(Errc::kInternal, "{} failed at {}:{}: {} ({})", what, file, line,
                    cudaGetErrorString(err), cudaGetErrorName(err));
}

inline Status cublas_status(cublasStatus_t st, const char* what, const char* file, int line) {
  if (st == CUBLAS_STATUS_SUCCESS) return ok();
  return make_error(Errc::kInternal, "{} failed at {}:{}: cuBLAS status {}", what, file, line,
                    static_cast<int>(st));
}

// A launch is checked right after it is enqueued so a bad configuration names
// the kernel that caused it rather than some later call.
inline Status last_launch_status(const char* kernel, const char* file, int line) {
  return cuda_status(cudaGetLastError(), kernel, file, line);
}

}  // namespace ringserve::kernels

#define CUDA_CHECK(expr) \
  RS_TRY_STATUS(::ringserve::kernels::cuda_status((expr), #expr, __FILE__, __LINE__))
#define CUBLAS_CHECK(expr) \
  RS_TRY_STATUS(::ringserve::kernels::cublas_status((expr), #expr, __FILE__, __LINE__))
#define CUDA_CHECK_LAUNCH(name) \
  RS_TRY_STATUS(::ringserve::kernels::last_launch_status(name, __FILE__, __LINE__))
