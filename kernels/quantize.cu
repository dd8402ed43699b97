#include "common.cuh"
#include "quantize.h"

namespace ringserve::kernels {
namespace {

__global__ void int8_to_bf16_kernel(const int8_t* __restrict__ q, __nv_bfloat16* __restrict__ out,
                                    size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t n4 = n / 4;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    uint32_t lo, hi;
    detail::int8x4_to_bf16x2(reinterpret_cast<const uint32_t*>(q)[i], lo, hi);
    reinterpret_cast<uint2*>(out)[i] = make_uint2(lo, hi);
  }
  for (size_t i = n4 * 4 + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    out[i] = __float2bfloat16(static_cast<float>(q[i]));
}

// (row, col) of tiled byte offset o (weight_layout.h), in a matrix of
// `cols` columns.
__device__ __forceinline__ void tiled_position(size_t o, int cols, int& row, int& col) {
  const size_t block = static_cast<size_t>(kTileRows) * cols;
  const int within = static_cast<int>(o % block);
  const int piece = within % (kTileRows * kTileCols);
  row = static_cast<int>(o / block) * kTileRows + piece / kTileCols;
  col = within / (kTileRows * kTileCols) * kTileCols + piece % kTileCols;
}

// One thread per 4 tiled bytes: reads run along the tiled source, writes
// land as 8-byte pieces of 128-byte row runs.
__global__ void int8_tiles_to_bf16_kernel(const int8_t* __restrict__ q,
                                          __nv_bfloat16* __restrict__ out, int cols, size_t n4) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    int row, col;
    tiled_position(4 * i, cols, row, col);
    uint32_t lo, hi;
    detail::int8x4_to_bf16x2(reinterpret_cast<const uint32_t*>(q)[i], lo, hi);
    *reinterpret_cast<uint2*>(out + static_cast<size_t>(row) * cols + col) = make_uint2(lo, hi);
  }
}

// One thread per 16 tiled bytes, gathered from the row-major source.
__global__ void tile_rows_kernel(const int8_t* __restrict__ src, int8_t* __restrict__ dst, int cols,
                                 size_t n16) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n16;
       i += stride) {
    int row, col;
    tiled_position(16 * i, cols, row, col);
    reinterpret_cast<uint4*>(dst)[i] =
        *reinterpret_cast<const uint4*>(src + static_cast<size_t>(row) * cols + col);
  }
}

unsigned grid_for(size_t items) {
  const size_t blocks = (items + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks));
}

__global__ void quantize_rows_kernel(const __nv_bfloat16* __restrict__ w, int cols,
                                     int8_t* __restrict__ q, float* __restrict__ scale) {
  __shared__ float scratch[32];
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  float m = 0.0f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x)
    m = fmaxf(m, fabsf(__bfloat162float(w[base + i])));
  m = detail::block_max(m, scratch);
  const float s = m / 127.0f;
  if (threadIdx.x == 0) scale[blockIdx.x] = s;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    float v = s > 0.0f ? rintf(__bfloat162float(w[base + i]) / s) : 0.0f;
    v = fminf(127.0f, fmaxf(-127.0f, v));
    q[base + i] = static_cast<int8_t>(v);
  }
}

}  // namespace

namespace detail {

cudaError_t int8_to_bf16_launch(const int8_t* q, __nv_bfloat16* out, size_t n,
                                cudaStream_t stream) {
  int8_to_bf16_kernel<<<grid_for(n / 4), 256, 0, stream>>>(q, out, n);
  return cudaGetLastError();
}

cudaError_t int8_tiles_to_bf16_launch(const int8_t* q, __nv_bfloat16* out, int rows, int cols,
                                      cudaStream_t stream) {
  const size_t n4 = static_cast<size_t>(rows) * cols / 4;
  int8_tiles_to_bf16_kernel<<<grid_for(n4), 256, 0, stream>>>(q, out, cols, n4);
  return cudaGetLastError();
}

cudaError_t tile_rows_launch(const int8_t* src, int8_t* dst, int rows, int cols,
                             cudaStream_t stream) {
  const size_t n16 = static_cast<size_t>(rows) * cols / 16;
  tile_rows_kernel<<<grid_for(n16), 256, 0, stream>>>(src, dst, cols, n16);
  return cudaGetLastError();
}

cudaError_t quantize_rows_launch(const __nv_bfloat16* w, int rows, int cols, int8_t* q,
                                 float* scale, cudaStream_t stream) {
  quantize_rows_kernel<<<rows, 256, 0, stream>>>(w, cols, q, scale);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
