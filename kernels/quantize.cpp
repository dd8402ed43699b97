#include "quantize.h"

#include "cuda_check.h"

namespace ringserve::kernels {

Status int8_to_bf16(const int8_t* q, __nv_bfloat16* out, size_t n, cudaStream_t stream) {
  if (n == 0) return ok();
  if (!q || !out) return make_error(Errc::kInvalidArgument, "int8_to_bf16: null pointer");
  if (reinterpret_cast<uintptr_t>(q) % 4 != 0 || reinterpret_cast<uintptr_t>(out) % 8 != 0)
    return make_error(Errc::kInvalidArgument, "int8_to_bf16: misaligned buffers");
  CUDA_CHECK(detail::int8_to_bf16_launch(q, out, n, stream));
  return ok();
}

Status quantize_rows_bf16(const __nv_bfloat16* w, int rows, int cols, int8_t* q, float* scale,
                          cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return make_error(Errc::kInvalidArgument, "quantize_rows_bf16: bad shape {}x{}", rows, cols);
  if (!w || !q || !scale)
    return make_error(Errc::kInvalidArgument, "quantize_rows_bf16: null pointer");
  CUDA_CHECK(detail::quantize_rows_launch(w, rows, cols, q, scale, stream));
  return ok();
}

}  // namespace ringserve::kernels
