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
  size_t blocks = (n / 4 + 255) / 256;
  blocks = blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks);
  int8_to_bf16_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(q, out, n);
  return cudaGetLastError();
}

cudaError_t quantize_rows_launch(const __nv_bfloat16* w, int rows, int cols, int8_t* q,
                                 float* scale, cudaStream_t stream) {
  quantize_rows_kernel<<<rows, 256, 0, stream>>>(w, cols, q, scale);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
