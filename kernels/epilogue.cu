#include "common.cuh"
#include "epilogue.h"
#include "gemv_w8a16.h"

namespace ringserve::kernels {
namespace {

__global__ void residual_add_kernel(const float* __restrict__ c, int ldc,
                                    const float* __restrict__ scale, const float* __restrict__ bias,
                                    float* __restrict__ resid, int n) {
  const int t = blockIdx.y;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = c[static_cast<size_t>(t) * ldc + i] * scale[i];
    if (bias) v += bias[i];
    resid[static_cast<size_t>(t) * n + i] += v;
  }
}

__global__ void silu_mul_kernel(const float* __restrict__ c, int ldc,
                                const float* __restrict__ scale, const float* __restrict__ bias,
                                __nv_bfloat16* __restrict__ out, int inter) {
  const int t = blockIdx.y;
  const float* row = c + static_cast<size_t>(t) * ldc;
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < inter; j += gridDim.x * blockDim.x) {
    const int gr = packed_gate_row(j), ur = gr + 16;
    float g = row[gr] * scale[gr];
    float u = row[ur] * scale[ur];
    if (bias) {
      g += bias[gr];
      u += bias[ur];
    }
    out[static_cast<size_t>(t) * inter + j] = __float2bfloat16(detail::silu(g) * u);
  }
}

int blocks_for(int n) {
  return (n + 255) / 256 < 64 ? (n + 255) / 256 : 64;
}

}  // namespace

namespace detail {

cudaError_t residual_add_launch(const float* c, int ldc, const float* scale, const float* bias,
                                float* resid, int tokens, int n, cudaStream_t stream) {
  residual_add_kernel<<<dim3(blocks_for(n), tokens), 256, 0, stream>>>(c, ldc, scale, bias, resid,
                                                                       n);
  return cudaGetLastError();
}

cudaError_t silu_mul_launch(const float* c, int ldc, const float* scale, const float* bias,
                            __nv_bfloat16* out, int tokens, int inter, cudaStream_t stream) {
  silu_mul_kernel<<<dim3(blocks_for(inter), tokens), 256, 0, stream>>>(c, ldc, scale, bias, out,
                                                                       inter);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
