#include "common.cuh"
#include "norm.h"

namespace ringserve::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                   __nv_bfloat16* __restrict__ y, int cols, float eps,
                   const int32_t* __restrict__ rows_index, __nv_bfloat16* __restrict__ y_lo) {
  __shared__ float scratch[32];
  const int row = blockIdx.x;
  const int src = rows_index ? rows_index[row] : row;
  const float* xr = x + static_cast<size_t>(src) * cols;
  __nv_bfloat16* yr = y + static_cast<size_t>(row) * cols;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < cols; i += kThreads) ss += xr[i] * xr[i];
  ss = detail::block_sum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(cols) + eps);
  for (int i = threadIdx.x; i < cols; i += kThreads) {
    const float v = xr[i] * inv * w[i];
    const __nv_bfloat16 hi = __float2bfloat16(v);
    yr[i] = hi;
    if (y_lo)
      y_lo[static_cast<size_t>(row) * cols + i] = __float2bfloat16(v - __bfloat162float(hi));
  }
}

__global__ void embedding_kernel(const __nv_bfloat16* __restrict__ table, int vocab, int cols,
                                 const int32_t* __restrict__ ids, float* __restrict__ out) {
  const int row = blockIdx.x;
  const int id = ids[row];
  float* o = out + static_cast<size_t>(row) * cols;
  const bool valid = id >= 0 && id < vocab;
  const __nv_bfloat16* t = table + static_cast<size_t>(valid ? id : 0) * cols;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) o[i] = valid ? __bfloat162float(t[i]) : 0.0f;
}

}  // namespace

namespace detail {

cudaError_t rmsnorm_launch(const float* x, const float* weight, __nv_bfloat16* y, int rows,
                           int cols, float eps, const int32_t* rows_index, cudaStream_t stream,
                           __nv_bfloat16* y_lo) {
  rmsnorm_kernel<<<rows, kThreads, 0, stream>>>(x, weight, y, cols, eps, rows_index, y_lo);
  return cudaGetLastError();
}

cudaError_t embedding_launch(const __nv_bfloat16* table, int vocab, int cols, const int32_t* ids,
                             int n, float* out, cudaStream_t stream) {
  embedding_kernel<<<n, 256, 0, stream>>>(table, vocab, cols, ids, out);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
