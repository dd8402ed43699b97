#include "common.cuh"
#include "rope_kv.h"

namespace ringserve::kernels {
namespace {

__global__ void rope_kv_kernel(const float* __restrict__ qkv, int ld,
                               const float* __restrict__ scale, const float* __restrict__ bias,
                               RopeKvArgs a) {
  const int tok = blockIdx.x;
  const int H = a.num_heads, KVH = a.num_kv_heads, D = a.head_dim, half = D / 2;
  const float* row = qkv + static_cast<size_t>(tok) * ld;
  const float pos = static_cast<float>(a.positions[tok]);
  const int slot = a.slots[tok];
  const int block = slot / a.block_tokens, off = slot % a.block_tokens;
  auto value = [&](int col) {
    float v = row[col];
    if (scale) v *= scale[col];
    if (bias) v += bias[col];
    return v;
  };
  auto cache_index = [&](int kvh, int d) {
    return ((static_cast<size_t>(block) * KVH + kvh) * a.block_tokens + off) * D + d;
  };
  // Rotations: one (head, i) pair per thread for q and k heads.
  for (int idx = threadIdx.x; idx < (H + KVH) * half; idx += blockDim.x) {
    const int head = idx / half, i = idx % half;
    const int col = head * D + i;
    const float x1 = value(col), x2 = value(col + half);
    // inv_freq rounded to bf16, exactly as the CPU reference computes it
    // (server/engine/rope.h): transformers keeps inv_freq as a buffer that is
    // cast with a bf16 checkpoint, so the golden logits were produced with
    // bf16 frequencies. Exact fp32 frequencies rotate position p by up to
    // p * 2^-9 rad differently, which alone costs ~1% of first-step logits
    // at a 40-token prompt. The double pow keeps the pre-rounding value equal
    // to the CPU's, so both round to the same bf16.
    const float exact =
        static_cast<float>(1.0 / pow(static_cast<double>(a.rope_theta), (2.0 * i) / D));
    const float inv_freq = __bfloat162float(__float2bfloat16_rn(exact));
    float s, c;
    sincosf(pos * inv_freq, &s, &c);
    const float o1 = x1 * c - x2 * s, o2 = x2 * c + x1 * s;
    if (head < H) {
      __nv_bfloat16* q = a.q_out + static_cast<size_t>(tok) * H * D + head * D;
      q[i] = __float2bfloat16(o1);
      q[i + half] = __float2bfloat16(o2);
    } else {
      const int kvh = head - H;
      a.k_cache[cache_index(kvh, i)] = __float2bfloat16(o1);
      a.k_cache[cache_index(kvh, i + half)] = __float2bfloat16(o2);
      if (a.k_out) {
        __nv_bfloat16* k = a.k_out + static_cast<size_t>(tok) * KVH * D + kvh * D;
        k[i] = __float2bfloat16(o1);
        k[i + half] = __float2bfloat16(o2);
      }
    }
  }
  for (int idx = threadIdx.x; idx < KVH * D; idx += blockDim.x) {
    const int kvh = idx / D, d = idx % D;
    const __nv_bfloat16 v = __float2bfloat16(value((H + KVH) * D + idx));
    a.v_cache[cache_index(kvh, d)] = v;
    if (a.v_out) a.v_out[static_cast<size_t>(tok) * KVH * D + idx] = v;
  }
}

}  // namespace

namespace detail {

cudaError_t rope_kv_launch(const float* qkv, int ld_qkv, const float* scale, const float* bias,
                           const RopeKvArgs& args, cudaStream_t stream) {
  rope_kv_kernel<<<args.ntok, 256, 0, stream>>>(qkv, ld_qkv, scale, bias, args);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
