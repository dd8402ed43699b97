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

Status int8_to_bf16(const int8_t* q, __nv_bfloat16* out, int rows, int cols, WeightLayout layout,
                    cudaStream_t stream) {
  if (rows < 0 || cols < 0)
    return make_error(Errc::kInvalidArgument, "int8_to_bf16: bad shape {}x{}", rows, cols);
  if (layout == WeightLayout::kRowMajor)
    return int8_to_bf16(q, out, static_cast<size_t>(rows) * cols, stream);
  if (!tiled_layout_fits(rows, cols))
    return make_error(Errc::kInvalidArgument, "int8_to_bf16: {}x{} cannot be tiled", rows, cols);
  if (!q || !out) return make_error(Errc::kInvalidArgument, "int8_to_bf16: null pointer");
  if (reinterpret_cast<uintptr_t>(q) % 4 != 0 || reinterpret_cast<uintptr_t>(out) % 8 != 0)
    return make_error(Errc::kInvalidArgument, "int8_to_bf16: misaligned buffers");
  CUDA_CHECK(detail::int8_tiles_to_bf16_launch(q, out, rows, cols, stream));
  return ok();
}

Status tile_int8_rows(const int8_t* src, int8_t* dst, int rows, int cols, cudaStream_t stream) {
  if (!tiled_layout_fits(rows, cols))
    return make_error(Errc::kInvalidArgument, "tile_int8_rows: {}x{} cannot be tiled", rows, cols);
  if (!src || !dst) return make_error(Errc::kInvalidArgument, "tile_int8_rows: null pointer");
  if (reinterpret_cast<uintptr_t>(src) % 16 != 0 || reinterpret_cast<uintptr_t>(dst) % 16 != 0)
    return make_error(Errc::kInvalidArgument, "tile_int8_rows: misaligned buffers");
  const size_t bytes = static_cast<size_t>(rows) * cols;
  if (src < dst + bytes && dst < src + bytes)
    return make_error(Errc::kInvalidArgument, "tile_int8_rows: src and dst overlap");
  CUDA_CHECK(detail::tile_rows_launch(src, dst, rows, cols, stream));
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
