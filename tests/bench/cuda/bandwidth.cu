#include "bandwidth.h"

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
    read_gemv_pattern_kernel(const int8_t* __restrict__ w, int cols, bool tiled, uint32_t* sink) {
  constexpr int kWarps = 8, kU = 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int nchunks = cols / 64;
  const int8_t* tile = w + static_cast<size_t>(blockIdx.x) * 16 * cols;
  auto at = [&](int h, int c) {
    return tiled ? tile + static_cast<size_t>(c) * 1024 + h * 512 + lane * 16
                 : tile + static_cast<size_t>(g + 8 * h) * cols + c * 64 + t * 16;
  };
  uint32_t acc = 0;
  for (int j = warp; j < nchunks; j += kWarps * kU) {
    uint4 v[kU][2];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int c = j + u * kWarps;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        v[u][h] =
            c < nchunks ? __ldcs(reinterpret_cast<const uint4*>(at(h, c))) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
#pragma unroll
      for (int h = 0; h < 2; ++h) acc ^= v[u][h].x ^ v[u][h].y ^ v[u][h].z ^ v[u][h].w;
  }
  if (acc == 0x12345678u) *sink = acc;  // practically never true; keeps the loads
}

int grid_for(cudaStream_t) {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms * 8;
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
                                     uint32_t* sink, cudaStream_t stream) {
  if (rows % 16 != 0 || cols % 64 != 0) return cudaErrorInvalidValue;
  read_gemv_pattern_kernel<<<rows / 16, 256, 0, stream>>>(w, cols, tiled, sink);
  return cudaGetLastError();
}

}  // namespace ringserve::bench
