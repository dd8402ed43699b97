#include "common.cuh"
#include "norm.h"

namespace ringserve::kernels {
namespace {

constexpr int kThreads = 256;

// General path (any cols / alignment): strided scalar loads, x read twice.
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                   __nv_bfloat16* __restrict__ y, int cols, float eps,
                   const int32_t* __restrict__ rows_index, __nv_bfloat16* __restrict__ y_lo) {
  __shared__ float scratch[32];
  // The GEMV that reads y may start streaming its weights now (it waits for
  // this kernel before reading y); and under programmatic launch, wait for
  // the producer of x.
  detail::pdl_launch_dependents();
  detail::pdl_wait();
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

// Vector path (cols % 4 == 0, x and w 16-byte aligned, y and y_lo 8-byte
// aligned): one wide block per row, each thread holding kPer float4 of x and
// of w in registers, so the row is read once, all loads are in flight
// together before the single block reduction, and y is written as 4 bf16 per
// store. Same arithmetic per element as the general path.
constexpr int kVecMaxThreads = 512;

template <int kPer>
__global__ void __launch_bounds__(kVecMaxThreads)
    rmsnorm_vec_kernel(const float* __restrict__ x, const float* __restrict__ w,
                       __nv_bfloat16* __restrict__ y, int cols, float eps,
                       const int32_t* __restrict__ rows_index, __nv_bfloat16* __restrict__ y_lo) {
  __shared__ float scratch[32];
  detail::pdl_launch_dependents();
  detail::pdl_wait();
  const int row = blockIdx.x;
  const int src = rows_index ? rows_index[row] : row;
  const int nvec = cols / 4;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<size_t>(src) * cols);
  const float4* wr = reinterpret_cast<const float4*>(w);
  float4 xv[kPer], wv[kPer];
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < nvec) {
      xv[k] = xr[i];
      wv[k] = __ldg(wr + i);
    } else {
      xv[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      wv[k] = xv[k];
    }
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k)
    ss += xv[k].x * xv[k].x + xv[k].y * xv[k].y + xv[k].z * xv[k].z + xv[k].w * xv[k].w;
  ss = detail::block_sum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(cols) + eps);
  uint2* yr = reinterpret_cast<uint2*>(y + static_cast<size_t>(row) * cols);
  uint2* lr = y_lo ? reinterpret_cast<uint2*>(y_lo + static_cast<size_t>(row) * cols) : nullptr;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i >= nvec) continue;
    const float v0 = xv[k].x * inv * wv[k].x, v1 = xv[k].y * inv * wv[k].y;
    const float v2 = xv[k].z * inv * wv[k].z, v3 = xv[k].w * inv * wv[k].w;
    const uint32_t h01 = detail::pack_bf16x2(v0, v1), h23 = detail::pack_bf16x2(v2, v3);
    yr[i] = make_uint2(h01, h23);
    if (lr) {
      lr[i] = make_uint2(detail::pack_bf16x2(v0 - detail::bf16_lo(h01), v1 - detail::bf16_hi(h01)),
                         detail::pack_bf16x2(v2 - detail::bf16_lo(h23), v3 - detail::bf16_hi(h23)));
    }
  }
}

template <int kPer>
cudaError_t rmsnorm_vec_launch(const float* x, const float* weight, __nv_bfloat16* y, int rows,
                               int cols, float eps, const int32_t* rows_index, cudaStream_t stream,
                               __nv_bfloat16* y_lo, bool pdl) {
  const int per_thread = (cols / 4 + kPer - 1) / kPer;
  const int threads = (per_thread + detail::kWarp - 1) / detail::kWarp * detail::kWarp;
  return detail::launch_maybe_pdl(rmsnorm_vec_kernel<kPer>, dim3(rows), dim3(threads), 0, stream,
                                  pdl, x, weight, y, cols, eps, rows_index, y_lo);
}

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
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
                           __nv_bfloat16* y_lo, bool pdl) {
  const bool vec = cols % 4 == 0 && aligned(x, 16) && aligned(weight, 16) && aligned(y, 8) &&
                   (!y_lo || aligned(y_lo, 8));
  const int nvec = cols / 4;
  if (vec && nvec <= kVecMaxThreads)
    return rmsnorm_vec_launch<1>(x, weight, y, rows, cols, eps, rows_index, stream, y_lo, pdl);
  if (vec && nvec <= 2 * kVecMaxThreads)
    return rmsnorm_vec_launch<2>(x, weight, y, rows, cols, eps, rows_index, stream, y_lo, pdl);
  if (vec && nvec <= 4 * kVecMaxThreads)
    return rmsnorm_vec_launch<4>(x, weight, y, rows, cols, eps, rows_index, stream, y_lo, pdl);
  if (vec && nvec <= 8 * kVecMaxThreads)
    return rmsnorm_vec_launch<8>(x, weight, y, rows, cols, eps, rows_index, stream, y_lo, pdl);
  return launch_maybe_pdl(rmsnorm_kernel, dim3(rows), dim3(kThreads), 0, stream, pdl, x, weight, y,
                          cols, eps, rows_index, y_lo);
}

cudaError_t embedding_launch(const __nv_bfloat16* table, int vocab, int cols, const int32_t* ids,
                             int n, float* out, cudaStream_t stream) {
  embedding_kernel<<<n, 256, 0, stream>>>(table, vocab, cols, ids, out);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
