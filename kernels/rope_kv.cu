#include "common.cuh"
#include "rope_kv.h"

namespace ringserve::kernels {
namespace {

// One block per (token, group of kHeadsPerBlock heads) of the H + 2 * KVH
// heads in the qkv row (q, k, then v heads), so a single decode token still
// spreads over (H + 2 * KVH) / 4 blocks. Each block computes the token's
// head_dim / 2 (cos, sin) pairs once into shared memory; every rotation of the
// block reads them from there.
constexpr int kThreads = 128;
constexpr int kHeadsPerBlock = 4;
constexpr int kMaxHalf = 128;  // head_dim <= 256 (checked on the host)
constexpr int kPairsPerThread = kHeadsPerBlock * kMaxHalf / kThreads;

__global__ void __launch_bounds__(kThreads)
    rope_kv_kernel(const float* __restrict__ qkv, int ld, const float* __restrict__ scale,
                   const float* __restrict__ bias, RopeKvArgs a) {
  detail::pdl_launch_dependents();
  detail::pdl_wait();  // under programmatic launch: the GEMV that wrote qkv
  const int tok = blockIdx.x;
  const int H = a.num_heads, KVH = a.num_kv_heads, D = a.head_dim, half = D / 2;
  const int h0 = blockIdx.y * kHeadsPerBlock;
  const int nh = min(kHeadsPerBlock, H + 2 * KVH - h0);
  const float* row = qkv + static_cast<size_t>(tok) * ld;
  auto value = [&](int col) {
    float v = row[col];
    if (scale) v *= scale[col];
    if (bias) v += bias[col];
    return v;
  };

  // This thread's (head, i) pairs, loaded before the table is built so the
  // loads overlap the sincos.
  float x1[kPairsPerThread], x2[kPairsPerThread];
#pragma unroll
  for (int k = 0; k < kPairsPerThread; ++k) {
    const int idx = threadIdx.x + k * kThreads;
    if (idx < nh * half) {
      const int col = (h0 + idx / half) * D + idx % half;
      x1[k] = value(col);
      x2[k] = value(col + half);
    }
  }

  // cos/sin of pos * inv_freq[i] in fp32 with the precise sincosf, as the CPU
  // reference (server/engine/rope.cpp) computes them. inv_freq is rounded to
  // bf16 there: transformers keeps it as a buffer cast with a bf16
  // checkpoint, so the golden logits were produced with bf16 frequencies
  // (exact fp32 ones cost ~0.7% of first-step logits at a 40-token prompt).
  // Without a precomputed table the double pow keeps the pre-rounding value
  // equal to the CPU's, so both round to the same bf16.
  __shared__ float cos_t[kMaxHalf], sin_t[kMaxHalf];
  if (h0 < H + KVH)
    detail::rope_table(static_cast<float>(a.positions[tok]), a.inv_freq, a.rope_theta, D, cos_t,
                       sin_t);
  __syncthreads();

  const int slot = a.slots[tok];
  const int block = slot / a.block_tokens, off = slot % a.block_tokens;
  auto cache_index = [&](int kvh, int d) {
    return kv_cache_offset(block, kvh, off, KVH, a.block_tokens, D) + d;
  };
#pragma unroll
  for (int k = 0; k < kPairsPerThread; ++k) {
    const int idx = threadIdx.x + k * kThreads;
    if (idx >= nh * half) continue;
    const int head = h0 + idx / half, i = idx % half;
    if (head < H + KVH) {
      const float2 rot = detail::rope_rotate(x1[k], x2[k], cos_t[i], sin_t[i]);
      const __nv_bfloat16 o1 = __float2bfloat16(rot.x);
      const __nv_bfloat16 o2 = __float2bfloat16(rot.y);
      if (head < H) {
        __nv_bfloat16* q = a.q_out + static_cast<size_t>(tok) * H * D + head * D;
        q[i] = o1;
        q[i + half] = o2;
      } else {
        const int kvh = head - H;
        a.k_cache[cache_index(kvh, i)] = o1;
        a.k_cache[cache_index(kvh, i + half)] = o2;
        if (a.k_out) {
          __nv_bfloat16* kp = a.k_out + static_cast<size_t>(tok) * KVH * D + kvh * D;
          kp[i] = o1;
          kp[i + half] = o2;
        }
      }
    } else {
      const int kvh = head - H - KVH;
      const __nv_bfloat16 v1 = __float2bfloat16(x1[k]), v2 = __float2bfloat16(x2[k]);
      a.v_cache[cache_index(kvh, i)] = v1;
      a.v_cache[cache_index(kvh, i + half)] = v2;
      if (a.v_out) {
        __nv_bfloat16* vp = a.v_out + static_cast<size_t>(tok) * KVH * D + kvh * D;
        vp[i] = v1;
        vp[i + half] = v2;
      }
    }
  }
}

}  // namespace

namespace detail {

cudaError_t rope_kv_launch(const float* qkv, int ld_qkv, const float* scale, const float* bias,
                           const RopeKvArgs& args, cudaStream_t stream) {
  const int heads = args.num_heads + 2 * args.num_kv_heads;
  const dim3 grid(args.ntok, (heads + kHeadsPerBlock - 1) / kHeadsPerBlock);
  return launch_maybe_pdl(rope_kv_kernel, grid, dim3(kThreads), 0, stream, args.pdl, qkv, ld_qkv,
                          scale, bias, args);
}

}  // namespace detail
}  // namespace ringserve::kernels
