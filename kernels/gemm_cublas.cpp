#include "gemm_cublas.h"

#include "cuda_check.h"

namespace ringserve::kernels {

Status gemm_bf16_nt(cublasHandle_t handle, int M, int N, int K, const __nv_bfloat16* A, int lda,
                    const __nv_bfloat16* B, int ldb, void* C, cudaDataType_t c_type, int ldc,
                    cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0 || lda < K || ldb < K || ldc < N)
    return make_error(Errc::kInvalidArgument, "gemm_bf16_nt: bad shape M={} N={} K={}", M, N, K);
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  const float one = 1.0f, zero = 0.0f;
  // Column-major view: C^T[N][M] = B[N][K] * A[M][K]^T, i.e. op(B^T_cm)=T, op(A^T_cm)=N.
  CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, B, CUDA_R_16BF, ldb, A,
                            CUDA_R_16BF, lda, &zero, C, c_type, ldc, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  return ok();
}

}  // namespace ringserve::kernels
