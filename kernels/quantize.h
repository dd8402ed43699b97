// Weight conversions on the GPU: int8 -> bf16 (exact integers, for the prefill
// GEMMs), bf16 -> int8 with one scale per row (loading a bf16 checkpoint:
// scale = max|w_row| / 127, q = round-half-even(w / scale), as in DESIGN.md),
// and row-major int8 into the decode GEMVs' 16x64 tiles (weight_layout.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "weight_layout.h"

#ifndef __CUDACC__
#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

#ifndef __CUDACC__
Status int8_to_bf16(const int8_t* q, __nv_bfloat16* out, size_t n, cudaStream_t stream);

// A [rows, cols] int8 matrix in `layout` to row-major bf16 (`out` holds
// rows * cols).
Status int8_to_bf16(const int8_t* q, __nv_bfloat16* out, int rows, int cols, WeightLayout layout,
                    cudaStream_t stream);

// Row-major `src` [rows, cols] into tiled `dst` (tiled_layout_fits; 16-byte
// aligned; not overlapping).
Status tile_int8_rows(const int8_t* src, int8_t* dst, int rows, int cols, cudaStream_t stream);

// An all-zero row gets scale 0 and q = 0.
Status quantize_rows_bf16(const __nv_bfloat16* w, int rows, int cols, int8_t* q, float* scale,
                          cudaStream_t stream);
#endif

namespace detail {
cudaError_t int8_to_bf16_launch(const int8_t* q, __nv_bfloat16* out, size_t n, cudaStream_t stream);
cudaError_t int8_tiles_to_bf16_launch(const int8_t* q, __nv_bfloat16* out, int rows, int cols,
                                      cudaStream_t stream);
cudaError_t tile_rows_launch(const int8_t* src, int8_t* dst, int rows, int cols,
                             cudaStream_t stream);
cudaError_t quantize_rows_launch(const __nv_bfloat16* w, int rows, int cols, int8_t* q,
                                 float* scale, cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
