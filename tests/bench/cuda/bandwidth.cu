#include "bandwidth.h"

#include <algorithm>

namespace ringserve::bench {
namespace {

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    dst[i] = src[i];
}

__global__ void read_kernel(const uint4* __restrict__ src, size_t n, uint32_t* sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = __ldcs(src + i), b = __ldcs(src + i + stride), c = __ldcs(src + i + 2 * stride),
                d = __ldcs(src + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^
           d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = __ldcs(src + i);
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x12345678u) *sink = acc;  // practically never true; keeps the loads
}

__global__ void __launch_bounds__(256)
    read_gemv_pattern_kernel(const int8_t* __restrict__ w, int tiles, int cols, bool tiled,
                             uint32_t* sink) {
  constexpr int kWarps = 8, kU = 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int nchunks = cols / 64;
  uint32_t acc = 0;
  // One tile per block, or (a grid smaller than the tile count) a block
  // walking tiles, as a persistent kernel would.
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int8_t* base = w + static_cast<size_t>(tile) * 16 * cols;
    auto at = [&](int h, int c) {
      return tiled ? base + static_cast<size_t>(c) * 1024 + h * 512 + lane * 16
                   : base + static_cast<size_t>(g + 8 * h) * cols + c * 64 + t * 16;
    };
    for (int j = warp; j < nchunks; j += kWarps * kU) {
      uint4 v[kU][2];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int c = j + u * kWarps;
#pragma unroll
        for (int h = 0; h < 2; ++h)
          v[u][h] = c < nchunks ? __ldcs(reinterpret_cast<const uint4*>(at(h, c)))
                                : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kU; ++u)
#pragma unroll
        for (int h = 0; h < 2; ++h) acc ^= v[u][h].x ^ v[u][h].y ^ v[u][h].z ^ v[u][h].w;
    }
  }
  if (acc == 0x12345678u) *sink = acc;  // practically never true; keeps the loads
}

int sm_count() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms;
}

int grid_for(cudaStream_t) {
  return sm_count() * 8;
}

}  // namespace

cudaError_t launch_copy(const void* src, void* dst, size_t bytes, cudaStream_t stream) {
  copy_kernel<<<grid_for(stream), 256, 0, stream>>>(static_cast<const uint4*>(src),
                                                    static_cast<uint4*>(dst), bytes / 16);
  return cudaGetLastError();
}

cudaError_t launch_read(const void* src, size_t bytes, uint32_t* sink, cudaStream_t stream) {
  read_kernel<<<grid_for(stream), 256, 0, stream>>>(static_cast<const uint4*>(src), bytes / 16,
                                                    sink);
  return cudaGetLastError();
}

cudaError_t launch_read_gemv_pattern(const int8_t* w, int rows, int cols, bool tiled,
                                     int blocks_per_sm, uint32_t* sink, cudaStream_t stream) {
  if (rows % 16 != 0 || cols % 64 != 0) return cudaErrorInvalidValue;
  const int tiles = rows / 16;
  int dev = 0, smem_per_sm = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
  // The GEMVs hold 3 blocks of 256 threads per SM at most (registers); this
  // kernel needs few, so unused shared memory holds it to the same 3.
  constexpr int kResident = 3;
  const int smem = smem_per_sm / kResident - 1024;  // 1 KB per block is reserved
  cudaError_t err = cudaFuncSetAttribute(read_gemv_pattern_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  const int per_sm = blocks_per_sm > 0 ? std::min(blocks_per_sm, kResident) : 0;
  const int grid = per_sm > 0 ? std::min(tiles, sm_count() * per_sm) : tiles;
  read_gemv_pattern_kernel<<<grid, 256, smem, stream>>>(w, tiles, cols, tiled, sink);
  return cudaGetLastError();
}

}  // namespace ringserve::bench
