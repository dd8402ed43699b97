#include "norm.h"

#include "cuda_check.h"

namespace ringserve::kernels {

Status rmsnorm_f32_to_bf16(const float* x, const float* weight, __nv_bfloat16* y, int rows,
                           int cols, float eps, const int32_t* rows_index, cudaStream_t stream,
                           __nv_bfloat16* y_lo, bool pdl) {
  if (rows <= 0 || cols <= 0)
    return make_error(Errc::kInvalidArgument, "rmsnorm: bad shape {}x{}", rows, cols);
  if (!x || !weight || !y) return make_error(Errc::kInvalidArgument, "rmsnorm: null pointer");
  CUDA_CHECK(detail::rmsnorm_launch(x, weight, y, rows, cols, eps, rows_index, stream, y_lo, pdl));
  return ok();
}

Status embedding_gather(const __nv_bfloat16* table, int vocab, int cols, const int32_t* ids, int n,
                        float* out, cudaStream_t stream) {
  if (n <= 0 || cols <= 0 || vocab <= 0)
    return make_error(Errc::kInvalidArgument, "embedding_gather: bad shape n={} cols={}", n, cols);
  if (!table || !ids || !out)
    return make_error(Errc::kInvalidArgument, "embedding_gather: null pointer");
  CUDA_CHECK(detail::embedding_launch(table, vocab, cols, ids, n, out, stream));
  return ok();
}

}  // namespace ringserve::kernels
