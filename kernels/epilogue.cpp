#include "epilogue.h"

#include "cuda_check.h"

namespace ringserve::kernels {

Status residual_add_scaled(const float* c, int ldc, const float* scale, const float* bias,
                           float* resid, int tokens, int n, cudaStream_t stream) {
  if (tokens <= 0 || n <= 0 || ldc < n)
    return make_error(Errc::kInvalidArgument, "residual_add_scaled: bad shape");
  if (!c || !scale || !resid)
    return make_error(Errc::kInvalidArgument, "residual_add_scaled: null pointer");
  CUDA_CHECK(detail::residual_add_launch(c, ldc, scale, bias, resid, tokens, n, stream));
  return ok();
}

Status silu_mul_scaled(const float* c, int ldc, const float* scale, const float* bias,
                       __nv_bfloat16* out, int tokens, int inter, cudaStream_t stream) {
  if (tokens <= 0 || inter <= 0 || inter % 16 != 0 || ldc < 2 * inter)
    return make_error(Errc::kInvalidArgument, "silu_mul_scaled: bad shape");
  if (!c || !scale || !out)
    return make_error(Errc::kInvalidArgument, "silu_mul_scaled: null pointer");
  CUDA_CHECK(detail::silu_mul_launch(c, ldc, scale, bias, out, tokens, inter, stream));
  return ok();
}

}  // namespace ringserve::kernels
