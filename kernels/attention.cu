#include "attention.h"
#include "common.cuh"

namespace ringserve::kernels {
namespace {

constexpr int kDecodeThreads = 128;

// The fused path's last block of a (sequence, kv head): merges the nsplits
// partial results of its G query heads, as attention_combine_kernel does
// for one head (rescale each split's sums to the global max, add,
// normalise), with 4 dimensions per thread. The partials were written by
// other blocks: read through L2 (ld.cg), after the caller's fence.
__device__ void merge_splits(const DecodeAttentionArgs& a, int b, int kvh, int nsplits) {
  const int H = a.num_heads, D = a.head_dim, G = H / a.num_kv_heads;
  __shared__ float merge_m[kAttentionMaxGroup], merge_inv_l[kAttentionMaxGroup];
  const int warp = threadIdx.x / detail::kWarp, lane = threadIdx.x % detail::kWarp;
  const float2* ml = reinterpret_cast<const float2*>(a.partial_ml);
  for (int g = warp; g < G; g += kDecodeThreads / detail::kWarp) {
    const size_t base = (static_cast<size_t>(b) * H + kvh * G + g) * a.max_splits;
    float m = -INFINITY;
    for (int s = lane; s < nsplits; s += detail::kWarp) m = fmaxf(m, __ldcg(ml + base + s).x);
    m = detail::warp_max(m);
    float l = 0.0f;
    for (int s = lane; s < nsplits; s += detail::kWarp) {
      const float2 v = __ldcg(ml + base + s);
      l += expf(v.x - m) * v.y;
    }
    l = detail::warp_sum(l);
    if (lane == 0) {
      merge_m[g] = m;
      merge_inv_l[g] = l > 0.0f ? 1.0f / l : 0.0f;
    }
  }
  __syncthreads();
  const int D4 = D / 4;
  for (int c = threadIdx.x; c < G * D4; c += kDecodeThreads) {
    const int g = c / D4, d4 = c % D4;
    const int qh = kvh * G + g;
    const size_t base = (static_cast<size_t>(b) * H + qh) * a.max_splits;
    const float m = merge_m[g];
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 8
    for (int s = 0; s < nsplits; ++s) {
      const float w = expf(__ldcg(ml + base + s).x - m);
      const float4 o = __ldcg(reinterpret_cast<const float4*>(a.partial_o + (base + s) * D) + d4);
      acc.x += w * o.x;
      acc.y += w * o.y;
      acc.z += w * o.z;
      acc.w += w * o.w;
    }
    const float inv_l = merge_inv_l[g];
    uint2 packed;
    packed.x = detail::pack_bf16x2(acc.x * inv_l, acc.y * inv_l);
    packed.y = detail::pack_bf16x2(acc.z * inv_l, acc.w * inv_l);
    *reinterpret_cast<uint2*>(a.out + (static_cast<size_t>(b) * H + qh) * D + 4 * d4) = packed;
  }
}

// One block per (split, kv head, sequence): the block's G query heads share
// every key and value it loads. kFused: the split length follows the context
// (decode_split_tokens) and the last block of a (sequence, kv head) merges
// the splits (merge_splits); otherwise the splits are split_tokens long and
// attention_combine_kernel merges them.
template <bool kFused>
__global__ void __launch_bounds__(kDecodeThreads) attention_decode_kernel(DecodeAttentionArgs a) {
  detail::pdl_launch_dependents();
  detail::pdl_wait();  // under programmatic launch: rope_kv's q and KV writes
  const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
  const int n = a.context_lens[b];
  int split_len = a.split_tokens, nsplits = 0;
  if (kFused) {
    split_len = decode_split_tokens(n, a.split_tokens, a.target_splits);
    nsplits = (n + split_len - 1) / split_len;
    if (nsplits > a.max_splits) {
      // A context past what max_splits was sized for (the host prevents
      // this): the longest splits; keys beyond max_splits of them are left
      // out rather than written out of bounds, and every split still counts.
      split_len = kAttentionMaxSplitTokens;
      nsplits = min(a.max_splits, (n + split_len - 1) / split_len);
    }
    if (n <= 0) {
      // Nothing to attend: zeros, as the combine kernel leaves them.
      if (split == 0)
        for (int i = threadIdx.x; i < a.num_heads / a.num_kv_heads * a.head_dim;
             i += kDecodeThreads)
          a.out[static_cast<size_t>(b) * a.num_heads * a.head_dim +
                kvh * (a.num_heads / a.num_kv_heads) * a.head_dim + i] = __float2bfloat16(0.0f);
      return;
    }
    if (split >= nsplits) return;
  }
  const int s0 = split * split_len;
  if (s0 >= n) return;
  const int len = min(split_len, n - s0);
  const int H = a.num_heads, D = a.head_dim, G = H / a.num_kv_heads;
  const int KVH = a.num_kv_heads, BT = a.block_tokens;
  const float softmax_scale = rsqrtf(static_cast<float>(D));
  // Row stride of the scores in shared memory (the launch sizes it).
  const int p_stride = kFused ? kAttentionMaxSplitTokens : a.split_tokens;

  extern __shared__ float smem[];
  float* q = smem;                           // [G][D]
  float* p = smem + kAttentionMaxGroup * D;  // [G][p_stride]
  __shared__ float ml[kAttentionMaxGroup][2];
  // Element offset of each of this split's keys in the pool: one block-table
  // lookup per key, done once here, so the value loop below has a single
  // dependent load per key instead of two.
  __shared__ size_t base_of[kAttentionMaxSplitTokens];

  for (int i = threadIdx.x; i < G * D; i += kDecodeThreads)
    q[i] = __bfloat162float(a.q[static_cast<size_t>(b) * H * D + kvh * G * D + i]);
  const int32_t* table = a.block_tables + static_cast<size_t>(b) * a.max_blocks_per_seq;
  for (int i = threadIdx.x; i < len; i += kDecodeThreads) {
    const int pos = s0 + i;
    const int block = table[pos / BT];
    base_of[i] = kv_cache_offset(block, kvh, pos % BT, KVH, BT, D);
    if (kFused) {
      // The values are read only after the scores and the softmax, and keys
      // past the first round of the score loop one round after another: have
      // their rows on the way to L2 now, so those loads wait on L2, not DRAM.
      const char* vrow = reinterpret_cast<const char*>(a.v_cache + base_of[i]);
      const char* krow = reinterpret_cast<const char*>(a.k_cache + base_of[i]);
      for (int off = 0; off < D * 2; off += 128) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(vrow + off));
        if (i >= kDecodeThreads / 8) asm volatile("prefetch.global.L2 [%0];" ::"l"(krow + off));
      }
    }
  }
  __syncthreads();
  auto slot_base = [&](int pos) { return base_of[pos - s0]; };

  // Scores: 8 lanes per key, each over D/8 dimensions, so a block covers 16
  // keys per round with every thread busy; partial dots meet by shuffles.
  constexpr int kSlices = 8;
  const int slice = threadIdx.x % kSlices;
  const int per = D / kSlices;  // head_dim % 8 == 0
  for (int i0 = 0; i0 < len; i0 += kDecodeThreads / kSlices) {
    const int i = i0 + threadIdx.x / kSlices;
    const bool valid = i < len;
    float acc[kAttentionMaxGroup];
#pragma unroll
    for (int g = 0; g < kAttentionMaxGroup; ++g) acc[g] = 0.0f;
    if (valid) {
      const __nv_bfloat16* kp = a.k_cache + slot_base(s0 + i) + slice * per;
      for (int d = 0; d < per; d += 8) {
        float kf[8];
        if (per % 8 == 0) {
          const uint4 kv = *reinterpret_cast<const uint4*>(kp + d);
          const uint32_t w[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            kf[2 * e] = detail::bf16_lo(w[e]);
            kf[2 * e + 1] = detail::bf16_hi(w[e]);
          }
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) kf[e] = d + e < per ? __bfloat162float(kp[d + e]) : 0.0f;
        }
#pragma unroll
        for (int g = 0; g < kAttentionMaxGroup; ++g) {
          if (g < G) {
            const float* qg = q + g * D + slice * per + d;
#pragma unroll
            for (int e = 0; e < 8; ++e)
              if (per % 8 == 0 || d + e < per) acc[g] += qg[e] * kf[e];
          }
        }
      }
    }
#pragma unroll
    for (int g = 0; g < kAttentionMaxGroup; ++g) {
#pragma unroll
      for (int o = 1; o < kSlices; o <<= 1) acc[g] += __shfl_xor_sync(0xffffffffu, acc[g], o);
    }
    if (valid && slice == 0) {
#pragma unroll
      for (int g = 0; g < kAttentionMaxGroup; ++g)
        if (g < G) p[g * p_stride + i] = acc[g] * softmax_scale;
    }
  }
  __syncthreads();

  // Softmax statistics per head, one warp per head.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int g = warp; g < G; g += kDecodeThreads / 32) {
    float* pg = p + g * p_stride;
    float m = -INFINITY;
    for (int i = lane; i < len; i += 32) m = fmaxf(m, pg[i]);
    m = detail::warp_max(m);
    float l = 0.0f;
    for (int i = lane; i < len; i += 32) {
      const float e = expf(pg[i] - m);
      pg[i] = e;
      l += e;
    }
    l = detail::warp_sum(l);
    if (lane == 0) {
      ml[g][0] = m;
      ml[g][1] = l;
    }
  }
  __syncthreads();

  // Values: one head-dim column per thread, coalesced across the block.
  const int nsplits_out = kFused ? nsplits : a.max_splits;  // > 1: partials
  for (int d = threadIdx.x; d < D; d += kDecodeThreads) {
    float acc[kAttentionMaxGroup];
#pragma unroll
    for (int g = 0; g < kAttentionMaxGroup; ++g) acc[g] = 0.0f;
      // Unrolled so several independent value loads are in flight per thread
      // (more in the fused path, whose splits may be longer).
#pragma unroll(kFused ? 16 : 8)
    for (int i = 0; i < len; ++i) {
      const float v = __bfloat162float(a.v_cache[base_of[i] + d]);
#pragma unroll
      for (int g = 0; g < kAttentionMaxGroup; ++g)
        if (g < G) acc[g] += p[g * p_stride + i] * v;
    }
#pragma unroll
    for (int g = 0; g < kAttentionMaxGroup; ++g) {
      if (g < G) {
        const int qh = kvh * G + g;
        if (kFused && nsplits_out == 1) {
          // The whole context in this block: normalise and write the output.
          a.out[(static_cast<size_t>(b) * H + qh) * D + d] = __float2bfloat16(acc[g] / ml[g][1]);
          continue;
        }
        const size_t o = (static_cast<size_t>(b) * H + qh) * a.max_splits + split;
        a.partial_o[o * D + d] = acc[g];
        if (d == 0) {
          a.partial_ml[o * 2] = ml[g][0];
          a.partial_ml[o * 2 + 1] = ml[g][1];
        }
      }
    }
  }
  if (!kFused || nsplits_out == 1) return;

  // Publish this split, count it; the block that completes the count merges.
  // The counter goes back to zero there: every split of this launch has
  // counted by then, and the next launch (the next layer, or a graph replay)
  // starts after this one ends.
  __shared__ bool is_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int* counter = a.split_counters + static_cast<size_t>(b) * KVH + kvh;
    is_last = atomicAdd(counter, 1) == nsplits - 1;
    if (is_last) atomicExch(counter, 0);
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  merge_splits(a, b, kvh, nsplits);
}

// Merges the splits of one (sequence, head): rescale each split's sums to the
// global max, add, normalise. The split statistics are reduced by the whole
// block and each split's weight exp(m_s - m) kept in shared memory, so the
// per-dimension loop is a row of independent loads (unrolled) rather than
// three serial passes of dependent ones. More splits than fit in shared
// memory take the serial path.
constexpr int kCombineSmemSplits = 2048;

__global__ void attention_combine_kernel(DecodeAttentionArgs a) {
  detail::pdl_launch_dependents();  // o_proj may start streaming its weights
  detail::pdl_wait();               // under programmatic launch: the split kernel
  const int qh = blockIdx.x, b = blockIdx.y;
  const int D = a.head_dim, H = a.num_heads;
  const int n = a.context_lens[b];
  const int nsplits = min(a.max_splits, (n + a.split_tokens - 1) / a.split_tokens);
  const size_t base = (static_cast<size_t>(b) * H + qh) * a.max_splits;
  __nv_bfloat16* out = a.out + static_cast<size_t>(b) * H * D + qh * D;
  if (nsplits <= kCombineSmemSplits) {
    __shared__ float weight[kCombineSmemSplits];
    __shared__ float scratch[32];
    float m = -INFINITY;
    for (int s = threadIdx.x; s < nsplits; s += blockDim.x)
      m = fmaxf(m, a.partial_ml[(base + s) * 2]);
    m = detail::block_max(m, scratch);
    float l = 0.0f;
    for (int s = threadIdx.x; s < nsplits; s += blockDim.x) {
      const float w = expf(a.partial_ml[(base + s) * 2] - m);
      weight[s] = w;
      l += w * a.partial_ml[(base + s) * 2 + 1];
    }
    l = detail::block_sum(l, scratch);  // its barriers also publish weight[]
    const float inv_l = l > 0.0f ? 1.0f / l : 0.0f;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
      float o = 0.0f;
#pragma unroll 8
      for (int s = 0; s < nsplits; ++s) o += weight[s] * a.partial_o[(base + s) * D + d];
      out[d] = __float2bfloat16(o * inv_l);
    }
    return;
  }
  float m = -INFINITY;
  for (int s = 0; s < nsplits; ++s) m = fmaxf(m, a.partial_ml[(base + s) * 2]);
  float l = 0.0f;
  for (int s = 0; s < nsplits; ++s)
    l += expf(a.partial_ml[(base + s) * 2] - m) * a.partial_ml[(base + s) * 2 + 1];
  const float inv_l = l > 0.0f ? 1.0f / l : 0.0f;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < nsplits; ++s)
      o += expf(a.partial_ml[(base + s) * 2] - m) * a.partial_o[(base + s) * D + d];
    out[d] = __float2bfloat16(o * inv_l);
  }
}

// Causal softmax over rows of S [H][T][T] (fp32) into P (bf16): row t keeps
// keys 0..t. One warp per row.
__global__ void causal_softmax_kernel(const float* __restrict__ s, __nv_bfloat16* __restrict__ p,
                                      int T, int rows) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = row % T;
  const float* sr = s + static_cast<size_t>(row) * T;
  __nv_bfloat16* pr = p + static_cast<size_t>(row) * T;
  float m = -INFINITY;
  for (int j = lane; j <= t; j += 32) m = fmaxf(m, sr[j]);
  m = detail::warp_max(m);
  float l = 0.0f;
  for (int j = lane; j <= t; j += 32) l += expf(sr[j] - m);
  l = detail::warp_sum(l);
  const float inv = 1.0f / l;
  for (int j = lane; j < T; j += 32)
    pr[j] = __float2bfloat16(j <= t ? expf(sr[j] - m) * inv : 0.0f);
}

struct PointerJob {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  __nv_bfloat16* out;
  float* scores;
  __nv_bfloat16* probs;
  int start, len, H, G, D, KVH, heads_per_pass;
};

// Pointer table for one sequence: [Q, K, S, P, V, O] x H.
__global__ void prefill_pointers_kernel(PointerJob j, void** ptrs) {
  const int qh = threadIdx.x + blockIdx.x * blockDim.x;
  if (qh >= j.H) return;
  const int kvh = qh / j.G;
  const size_t tt = static_cast<size_t>(j.len) * j.len;
  ptrs[0 * j.H + qh] =
      const_cast<__nv_bfloat16*>(j.q) + static_cast<size_t>(j.start) * j.H * j.D + qh * j.D;
  ptrs[1 * j.H + qh] =
      const_cast<__nv_bfloat16*>(j.k) + static_cast<size_t>(j.start) * j.KVH * j.D + kvh * j.D;
  ptrs[2 * j.H + qh] = j.scores + (qh % j.heads_per_pass) * tt;
  ptrs[3 * j.H + qh] = j.probs + (qh % j.heads_per_pass) * tt;
  ptrs[4 * j.H + qh] =
      const_cast<__nv_bfloat16*>(j.v) + static_cast<size_t>(j.start) * j.KVH * j.D + kvh * j.D;
  ptrs[5 * j.H + qh] = j.out + static_cast<size_t>(j.start) * j.H * j.D + qh * j.D;
}

}  // namespace

namespace detail {

cudaError_t attention_decode_launch(const DecodeAttentionArgs& a, cudaStream_t stream) {
  const dim3 grid(a.max_splits, a.num_kv_heads, a.batch);
  if (a.split_counters) {
    const size_t smem =
        sizeof(float) * kAttentionMaxGroup * (a.head_dim + kAttentionMaxSplitTokens);
    return launch_maybe_pdl(attention_decode_kernel<true>, grid, dim3(kDecodeThreads), smem, stream,
                            a.pdl, a);
  }
  const size_t smem = sizeof(float) * kAttentionMaxGroup * (a.head_dim + a.split_tokens);
  const cudaError_t err = launch_maybe_pdl(attention_decode_kernel<false>, grid,
                                           dim3(kDecodeThreads), smem, stream, a.pdl, a);
  if (err != cudaSuccess) return err;
  return launch_maybe_pdl(attention_combine_kernel, dim3(a.num_heads, a.batch), dim3(128), 0,
                          stream, a.pdl, a);
}

cudaError_t prefill_pointers_launch(const PrefillAttentionArgs& a, int s, cudaStream_t stream) {
  const PointerJob j{a.q,
                     a.k,
                     a.v,
                     a.out,
                     a.scores,
                     a.probs,
                     a.seq_start[s],
                     a.seq_len[s],
                     a.num_heads,
                     a.num_heads / a.num_kv_heads,
                     a.head_dim,
                     a.num_kv_heads,
                     a.heads_per_pass > 0 ? a.heads_per_pass : a.num_heads};
  prefill_pointers_kernel<<<(a.num_heads + 127) / 128, 128, 0, stream>>>(
      j, a.pointers + static_cast<size_t>(s) * 6 * a.num_heads);
  return cudaGetLastError();
}

cudaError_t causal_softmax_launch(const float* scores, __nv_bfloat16* probs, int T, int rows,
                                  cudaStream_t stream) {
  causal_softmax_kernel<<<(rows + 7) / 8, 256, 0, stream>>>(scores, probs, T, rows);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
