// Decode attention with RoPE and the KV write fused in, on thread block
// clusters (sm_90). See RopeAttentionArgs in attention.h.
#include <cooperative_groups.h>

#include <map>
#include <mutex>

#include "attention.h"
#include "common.cuh"

namespace ringserve::kernels {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 256;
// Keys are staged in shared memory a chunk at a time (the kernel's CHUNK,
// RopeAttentionArgs::chunk_keys): a block with more keys than that walks
// them in chunks with an online softmax. Chunks in shared memory at a time:
// while one is used, the next kStages - 1 stream in (three or four 64-key
// stages were at most 3 % faster than two at batch 1 on the H200, and far
// slower at batch 4, where two blocks no longer shared an SM;
// docs/BENCHMARKS.md).
constexpr int kStages = 2;
// The query heads of one kv head are the N = 8 side of the score mma; a
// group of fewer heads is padded with zero queries.
constexpr int kHeads = 8;
static_assert(kAttentionMaxGroup <= kHeads);

// Row stride, in elements, of the probabilities as the value mma's B
// operand ([kHeads][chunk + 8] bf16): its fragment loads for 8 heads then
// fall in distinct banks.
__host__ __device__ constexpr int prob_stride(int chunk) {
  return chunk + 8;
}
// The probabilities enter the value mma as the sum of this many bf16 parts,
// each the rounding of what the parts before it left: three hold a float's
// 24 significant bits, so the products are those of the fp32 probability.
constexpr int kProbParts = 3;

// Shared-memory layout, in bytes from the start. Keys and values are staged
// with rows of D + 8 elements: the mma fragment loads (and ldmatrix rows) of
// 8 rows then fall in 32 distinct banks instead of 8 rows on the same 4.
struct Layout {
  int kstride;  // elements per staged key or value row
  size_t k, v, q, p, parts, acc, total;
};

// How many of a (sequence, kv head)'s G * D outputs each of the C blocks of
// its cluster finishes: block k owns outputs [k share, (k + 1) share).
__host__ __device__ constexpr int output_share(int D, int G, int C) {
  return (G * D + C - 1) / C;
}

__host__ __device__ inline Layout layout(int D, int G, int C, int chunk) {
  Layout l{};
  l.kstride = D + 8;
  l.k = 0;
  l.v = l.k + sizeof(__nv_bfloat16) * kStages * chunk * l.kstride;
  l.q = l.v + sizeof(__nv_bfloat16) * kStages * chunk * l.kstride;
  // q: [kHeads][kstride] bf16; p, the scores: [chunk][kHeads] f32; parts:
  // [kProbParts][kHeads][prob_stride] bf16; acc: the partial sums this block
  // receives for its outputs, [C][output_share] f32.
  l.p = l.q + sizeof(__nv_bfloat16) * kHeads * l.kstride;
  l.parts = l.p + sizeof(float) * chunk * kHeads;
  l.acc = l.parts + sizeof(__nv_bfloat16) * kProbParts * kHeads * prob_stride(chunk);
  l.total = l.acc + sizeof(float) * C * output_share(D, G, C);
  return l;
}

// The device code exists for sm_90 and newer only (clusters); older targets
// get an empty kernel, which the host never launches there.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
constexpr int kMaxHalf = kAttentionMaxHeadDim / 2;

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// Waits until at most N of this thread's committed groups are in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait_pending() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint32_t lds32(const __nv_bfloat16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// Four 8x8 bf16 matrices from shared memory, transposed: lane l gives the
// address of row l % 8 of matrix l / 8, and gets in r[j] elements (2t, g)
// and (2t + 1, g) of matrix j (lane = 4 g + t).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __nv_bfloat16* row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// Starts copying keys [c0, c1) of (sequence b, kv head kvh) from the paged
// cache into rows 0.. of kbuf and vbuf (rows of kstride), 16 bytes per
// copy. The row of key `skip` (the new token, whose cache slot is written by
// this kernel) is left out.
__device__ void stage_chunk(const DecodeAttentionArgs& a, int b, int kvh, int c0, int c1, int skip,
                            int kstride, __nv_bfloat16* kbuf, __nv_bfloat16* vbuf) {
  const int D = a.head_dim, pieces = D / 8, BT = a.block_tokens;
  const int32_t* table = a.block_tables + static_cast<size_t>(b) * a.max_blocks_per_seq;
  for (int idx = threadIdx.x; idx < (c1 - c0) * pieces; idx += kThreads) {
    const int j = idx / pieces, part = idx % pieces, pos = c0 + j;
    if (pos == skip) continue;
    const size_t src =
        kv_cache_offset(table[pos / BT], kvh, pos % BT, a.num_kv_heads, BT, D) + part * 8;
    cp_async16(kbuf + j * kstride + part * 8, a.k_cache + src);
    cp_async16(vbuf + j * kstride + part * 8, a.v_cache + src);
  }
}

#endif

// grid (C, kv heads, batch), clusters of C blocks along x: block `rank` of
// the cluster of (b, kvh) attends keys [rank * per, (rank + 1) * per).
//
// Per chunk: the scores of all heads of the group come from tensor-core
// mmas (keys as M, head dimensions as K, the heads as N = 8), exact bf16
// products summed in fp32 as the scalar kernels do, only in another order.
// The values too (head dimensions as M, keys as K, the heads as N), each
// warp keeping 16 dimensions of every head in its accumulators across the
// chunks. The probabilities enter as kProbParts bf16 parts that sum to the
// fp32 probability, so nothing is lost to bf16's 8 bits: two parts (16
// bits) were measured to flip the bf16 rounding of enough outputs to move a
// tiny model's logits by 5e-3 against the split kernels. (Summed on the
// CUDA cores, two dimensions of every head a thread, the values were the
// kernel's longest phase: at long contexts a block was bound by instruction
// issue, not by its loads, and more stages of keys in flight did not help.)
template <int C, int CHUNK>
__global__ void __launch_bounds__(kThreads, 2) attention_decode_rope_kernel(RopeAttentionArgs ra) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kChunk = CHUNK, kPStride = prob_stride(CHUNK);
  const DecodeAttentionArgs& a = ra.attn;
  const RopeKvArgs& r = ra.rope;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int kvh = blockIdx.y, b = blockIdx.z;
  // Remote shared memory may be written only once its block runs: this
  // arrival, waited for before the first remote store at the end, says so
  // without making anyone wait here.
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  const int H = a.num_heads, KVH = a.num_kv_heads, D = a.head_dim, G = H / KVH, half = D / 2;
  const int BT = a.block_tokens;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Layout L = layout(D, G, C, kChunk);
  const int ks = L.kstride;
  // kStages chunks of keys and values: chunk c lives in stage c % kStages.
  auto* kbase = reinterpret_cast<__nv_bfloat16*>(smem_raw + L.k);
  auto* vbase = reinterpret_cast<__nv_bfloat16*>(smem_raw + L.v);
  auto* q = reinterpret_cast<__nv_bfloat16*>(smem_raw + L.q);  // [kHeads][ks]
  float* p = reinterpret_cast<float*>(smem_raw + L.p);         // [kChunk][kHeads]
  // [kProbParts][kHeads][kPStride]
  auto* parts = reinterpret_cast<__nv_bfloat16*>(smem_raw + L.parts);
  float* recv = reinterpret_cast<float*>(smem_raw + L.acc);  // see the end
  auto kbuf = [&](int c) { return kbase + (c % kStages) * kChunk * ks; };
  auto vbuf = [&](int c) { return vbase + (c % kStages) * kChunk * ks; };
  __shared__ float cos_t[kMaxHalf], sin_t[kMaxHalf];
  __shared__ float m_s[kHeads], l_s[kHeads], corr_s[kHeads];
  __shared__ __align__(16) __nv_bfloat16 new_k[kAttentionMaxHeadDim], new_v[kAttentionMaxHeadDim];

  // The step's metadata, this thread's query inputs and its rotation
  // frequency are independent loads, issued together before the first
  // chunk's copies (whose asm orders everything after it): one round trip
  // to L2 instead of one per load. Reading qkv this early relies on the
  // kernel being launched normally, never under PDL (RopeAttentionArgs).
  const int n = a.context_lens[b];
  const float position = static_cast<float>(r.positions[b]);
  const float* row = ra.qkv + static_cast<size_t>(b) * ra.ld_qkv;
  constexpr int kQueryLoads = (kHeads * kMaxHalf + kThreads - 1) / kThreads;
  float qx1[kQueryLoads], qx2[kQueryLoads];
#pragma unroll
  for (int j = 0; j < kQueryLoads; ++j) {
    const int idx = threadIdx.x + j * kThreads, g = idx / half, i = idx % half;
    const bool live = idx < kHeads * half && g < G;
    qx1[j] = live ? row[(kvh * G + g) * D + i] : 0.0f;
    qx2[j] = live ? row[(kvh * G + g) * D + i + half] : 0.0f;
  }
  const float freq =
      threadIdx.x < half ? detail::rope_inv_freq(r.inv_freq, r.rope_theta, threadIdx.x, D) : 0.0f;
  // The new token's key and value are read here too, by every block
  // (whether it holds the new key is known only once n has arrived): the
  // block that writes them no longer adds a dependent round trip to L2
  // before the cluster barrier, which all the others wait at.
  static_assert(kAttentionMaxHeadDim <= kThreads, "one key and value element per thread");
  const float* kx = row + (H + kvh) * D;
  const float* vx = row + (H + KVH + kvh) * D;
  const float kx1 = threadIdx.x < half ? kx[threadIdx.x] : 0.0f;
  const float kx2 = threadIdx.x < half ? kx[threadIdx.x + half] : 0.0f;
  const float vx1 = threadIdx.x < D ? vx[threadIdx.x] : 0.0f;

  // The first chunks are on their way, and the rotation table built,
  // before the queries are rotated. Every thread commits one group per
  // chunk, empty or not, so "chunk c has landed" is always "at most
  // kStages - 1 groups pending" after chunk c + kStages - 1 was committed.
  const int per = (n + C - 1) / C;
  const int k0 = min(n, rank * per), k1 = min(n, k0 + per);
  const int nchunks = (k1 - k0 + kChunk - 1) / kChunk;
  const int new_key = n - 1;  // the token this step adds: its K and V are in qkv
  const bool owns_new = new_key >= k0 && new_key < k1;
  const int skip = owns_new ? new_key : -1;
  auto stage = [&](int c) {
    if (c < nchunks) {
      const int c0 = k0 + c * kChunk;
      stage_chunk(a, b, kvh, c0, min(k1, c0 + kChunk), skip, ks, kbuf(c), vbuf(c));
    }
    cp_async_commit();
  };
#pragma unroll
  for (int c = 0; c < kStages - 1; ++c) stage(c);
  if (threadIdx.x < half) {  // detail::rope_table's values
    float sn, cs;
    sincosf(position * freq, &sn, &cs);
    cos_t[threadIdx.x] = cs;
    sin_t[threadIdx.x] = sn;
  }
  if (threadIdx.x < kHeads) {
    m_s[threadIdx.x] = -INFINITY;
    l_s[threadIdx.x] = 0.0f;
  }
  // The padding heads' probabilities: zero, so their value sums stay zero.
  for (int i = threadIdx.x; i < kProbParts * (kHeads - G) * kPStride; i += kThreads) {
    const int part = i / ((kHeads - G) * kPStride), at = i % ((kHeads - G) * kPStride);
    parts[(part * kHeads + G) * kPStride + at] = __float2bfloat16(0.0f);
  }
  __syncthreads();

  // Queries rotated and rounded to bf16, as rope_kv_write stores them; the
  // padding heads are zero.
#pragma unroll
  for (int j = 0; j < kQueryLoads; ++j) {
    const int idx = threadIdx.x + j * kThreads, g = idx / half, i = idx % half;
    if (idx >= kHeads * half) break;
    __nv_bfloat16 lo = __float2bfloat16(0.0f), hi = lo;
    if (g < G) {
      const float2 rot = detail::rope_rotate(qx1[j], qx2[j], cos_t[i], sin_t[i]);
      lo = __float2bfloat16(rot.x);
      hi = __float2bfloat16(rot.y);
    }
    q[g * ks + i] = lo;
    q[g * ks + i + half] = hi;
  }
  if (owns_new) {
    const int slot = r.slots[b];
    const size_t dst = kv_cache_offset(slot / BT, kvh, slot % BT, KVH, BT, D);
    const int i = threadIdx.x;
    if (i < half) {
      const float2 rot = detail::rope_rotate(kx1, kx2, cos_t[i], sin_t[i]);
      const __nv_bfloat16 o1 = __float2bfloat16(rot.x);
      const __nv_bfloat16 o2 = __float2bfloat16(rot.y);
      new_k[i] = o1;
      new_k[i + half] = o2;
      r.k_cache[dst + i] = o1;
      r.k_cache[dst + i + half] = o2;
    }
    if (i < D) {
      const __nv_bfloat16 v = __float2bfloat16(vx1);
      new_v[i] = v;
      r.v_cache[dst + i] = v;
    }
  }

  const float softmax_scale = rsqrtf(static_cast<float>(D));
  constexpr int kWarps = kThreads / detail::kWarp;
  const int warp = threadIdx.x / detail::kWarp, lane = threadIdx.x % detail::kWarp;
  const int fg = lane >> 2, ft = lane & 3;  // mma fragment row and column group
  // Values: warp w accumulates dimensions [16 m, 16 m + 16) of every head
  // for the tiles m = w, w + kWarps (head_dim <= 256: at most two).
  constexpr int kValueTiles = (kAttentionMaxHeadDim / 16 + kWarps - 1) / kWarps;
  float acc[kValueTiles][4] = {};
  // This lane's ldmatrix row within a 16-key, 16-dimension tile: matrix
  // lane / 8 is (keys + 8 * (lane / 16), dimensions + 8 * (lane / 8 % 2)).
  const int ld_key = (lane & 7) + ((lane >> 4) & 1) * 8, ld_dim = ((lane >> 3) & 1) * 8;

  for (int c = 0; c < nchunks; ++c) {
    const int c0 = k0 + c * kChunk, len = min(kChunk, k1 - c0);
    // Its stage was last read in chunk c - 1, which ended in a barrier.
    stage(c + kStages - 1);
    cp_async_wait_pending<kStages - 1>();
    __syncthreads();  // every thread's copies, the queries and new_k / new_v
    __nv_bfloat16* kb = kbuf(c);
    __nv_bfloat16* vb = vbuf(c);
    if (owns_new && new_key < c0 + len) {
      for (int d = threadIdx.x; d < D; d += kThreads) {
        kb[(new_key - c0) * ks + d] = new_k[d];
        vb[(new_key - c0) * ks + d] = new_v[d];
      }
      __syncthreads();
    }

    // The value rows past len up to the next 16 are read by the last value
    // mma with zero probabilities: stale or never written, they must not
    // hold infinities or NaNs. (Key rows past len only reach dropped scores.)
    const int len16 = (len + 15) / 16 * 16;
    for (int i = threadIdx.x; i < (len16 - len) * D; i += kThreads)
      vb[(len + i / D) * ks + i % D] = __float2bfloat16(0.0f);

    // Scores: warp w takes keys [16 w, 16 w + 16). Rows past len hold stale
    // data; a row of A only reaches the same row of the result, which is
    // dropped.
    for (int i0 = warp * 16; i0 < len; i0 += kWarps * 16) {
      float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const __nv_bfloat16* ka = kb + (i0 + fg) * ks + 2 * ft;
      const __nv_bfloat16* qb = q + fg * ks + 2 * ft;
      for (int k = 0; k < D; k += 16)
        detail::mma_bf16_16816(s, lds32(ka + k), lds32(ka + 8 * ks + k), lds32(ka + k + 8),
                               lds32(ka + 8 * ks + k + 8), lds32(qb + k), lds32(qb + k + 8));
      // s[0..1]: key i0 + fg, heads 2 ft and 2 ft + 1; s[2..3]: key i0 + fg + 8.
      const int ia = i0 + fg, ib = ia + 8;
      if (ia < len)
        *reinterpret_cast<float2*>(p + ia * kHeads + 2 * ft) =
            make_float2(s[0] * softmax_scale, s[1] * softmax_scale);
      if (ib < len)
        *reinterpret_cast<float2*>(p + ib * kHeads + 2 * ft) =
            make_float2(s[2] * softmax_scale, s[3] * softmax_scale);
    }
    __syncthreads();

    // Online softmax, one warp per head: rescale what earlier chunks summed.
    // The probabilities go to `parts`, those of keys past len as zeros.
    for (int g = warp; g < G; g += kWarps) {
      float mx = -INFINITY;
      for (int i = lane; i < len; i += detail::kWarp) mx = fmaxf(mx, p[i * kHeads + g]);
      mx = detail::warp_max(mx);
      const float m_old = m_s[g], m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
      for (int i = lane; i < len16; i += detail::kWarp) {
        const float e = i < len ? expf(p[i * kHeads + g] - m_new) : 0.0f;
        float rest = e;
#pragma unroll
        for (int part = 0; part < kProbParts; ++part) {
          const __nv_bfloat16 x = __float2bfloat16(rest);
          parts[(part * kHeads + g) * kPStride + i] = x;
          rest -= __bfloat162float(x);
        }
        sum += e;
      }
      sum = detail::warp_sum(sum);
      if (lane == 0) {
        const float corr = expf(m_old - m_new);  // 0 on the first chunk
        corr_s[g] = corr;
        l_s[g] = l_s[g] * corr + sum;
        m_s[g] = m_new;
      }
    }
    __syncthreads();

    // Values: out[dims, heads] += V^T P^T over the chunk's keys, 16 at a
    // time, after rescaling each head's sums (columns 2 ft and 2 ft + 1).
    const float corr0 = 2 * ft < G ? corr_s[2 * ft] : 0.0f;
    const float corr1 = 2 * ft + 1 < G ? corr_s[2 * ft + 1] : 0.0f;
#pragma unroll
    for (int t = 0; t < kValueTiles; ++t) {
      const int m0 = (warp + t * kWarps) * 16;
      if (m0 >= D) break;
      acc[t][0] *= corr0;
      acc[t][1] *= corr1;
      acc[t][2] *= corr0;
      acc[t][3] *= corr1;
      for (int k0 = 0; k0 < len16; k0 += 16) {
        uint32_t v[4];
        ldmatrix_x4_trans(v, vb + (k0 + ld_key) * ks + m0 + ld_dim);
        // Smallest part first, the order an fp32 sum of the parts would take.
#pragma unroll
        for (int part = kProbParts - 1; part >= 0; --part) {
          const __nv_bfloat16* pb = parts + (part * kHeads + fg) * kPStride + k0 + 2 * ft;
          detail::mma_bf16_16816(acc[t], v[0], v[1], v[2], v[3], lds32(pb), lds32(pb + 8));
        }
      }
    }
    __syncthreads();  // before kbuf(c), vbuf(c), p and parts are written again
  }

  // The combination, pushed rather than pulled: output (g, d) belongs to
  // block (g D + d) / share of the cluster, and every block stores its
  // partial sum for it, and its maxima and sums for every head, straight
  // into that block's shared memory (remote stores need no round trip).
  // After one cluster barrier each block has all it needs locally and no
  // block reads another's memory, so none has to wait for the others to
  // finish before it exits. Pulling took two rounds of remote loads and a
  // second barrier.
  __shared__ float m_all[C][kHeads], l_all[C][kHeads];
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every block has started
  const int share = output_share(D, G, C);
  auto send = [&](int g, int d, float v) {
    const int idx = g * D + d;
    cluster.map_shared_rank(recv, idx / share)[rank * share + idx % share] = v;
  };
  // acc[t]: rows fg and fg + 8 of dimension tile t, heads 2 ft and 2 ft + 1.
#pragma unroll
  for (int t = 0; t < kValueTiles; ++t) {
    const int d = (warp + t * kWarps) * 16 + fg;
    if (d >= D) break;
    if (2 * ft < G) {
      send(2 * ft, d, acc[t][0]);
      send(2 * ft, d + 8, acc[t][2]);
    }
    if (2 * ft + 1 < G) {
      send(2 * ft + 1, d, acc[t][1]);
      send(2 * ft + 1, d + 8, acc[t][3]);
    }
  }
  for (int i = threadIdx.x; i < C * G; i += kThreads) {
    const int k = i / G, g = i % G;
    cluster.map_shared_rank(&m_all[0][0], k)[rank * kHeads + g] = m_s[g];
    cluster.map_shared_rank(&l_all[0][0], k)[rank * kHeads + g] = l_s[g];
  }
  cluster.sync();  // release / acquire: every block's stores have landed

  // This block's share of the G * D outputs: rescale each block's sums to
  // the common maximum, add (block 0 first), normalise. A block without
  // keys has m = -inf and weighs nothing; with no keys at all the output
  // is zero. A thread finishes at most one output (G D / C is at most
  // kHeads * kAttentionMaxHeadDim / 8 = kThreads), so it computes the
  // blocks' weights for its head itself: sharing them would cost a block
  // barrier.
  const int o_end = min(G * D, (rank + 1) * share);
  for (int idx = rank * share + threadIdx.x; idx < o_end; idx += kThreads) {
    const int g = idx / D, d = idx % D, at = idx - rank * share;
    float mmax = -INFINITY;
#pragma unroll
    for (int k = 0; k < C; ++k) mmax = fmaxf(mmax, m_all[k][g]);
    float num = 0.0f, den = 0.0f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
      const float w = mmax == -INFINITY ? 0.0f : expf(m_all[k][g] - mmax);
      num += w * recv[k * share + at];
      den += w * l_all[k][g];
    }
    a.out[(static_cast<size_t>(b) * H + kvh * G + g) * D + d] =
        __float2bfloat16(den > 0.0f ? num / den : 0.0f);
  }
#endif
}

template <int C, int CHUNK>
cudaLaunchConfig_t launch_config(const RopeAttentionArgs& ra, cudaStream_t stream,
                                 cudaLaunchAttribute (&attr)[1]) {
  const auto& a = ra.attn;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(C, a.num_kv_heads, a.batch);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = layout(a.head_dim, a.num_heads / a.num_kv_heads, C, CHUNK).total;
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.numAttrs = 1;
  cfg.attrs = attr;
  return cfg;
}

// Shared memory beyond 48 KB and clusters beyond 8 blocks must be asked for
// per kernel and device. Asked once per device and size, not at every launch:
// without graphs this runs 28 times a decode step. A size beyond what the
// device grants a block is refused here, before the runtime records an error
// that a later launch's cudaGetLastError would report as its own.
template <int C, int CHUNK>
cudaError_t configure(size_t smem) {
  static std::mutex mu;
  static std::map<int, size_t> granted;  // device -> the largest size asked for
  int device = 0, optin = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  std::lock_guard lock(mu);
  auto it = granted.find(device);
  if (it != granted.end() && it->second >= smem) return cudaSuccess;
  auto kernel = attention_decode_rope_kernel<C, CHUNK>;
  cudaFuncAttributes fa{};
  err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err == cudaSuccess) err = cudaFuncGetAttributes(&fa, kernel);
  if (err != cudaSuccess) return err;
  if (smem + fa.sharedSizeBytes > static_cast<size_t>(optin)) return cudaErrorInvalidValue;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
  if (err == cudaSuccess && C > 8)
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (err == cudaSuccess) granted[device] = smem;
  return err;
}

template <int C, int CHUNK>
cudaError_t launch(const RopeAttentionArgs& ra, cudaStream_t stream) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = launch_config<C, CHUNK>(ra, stream, attr);
  cudaError_t err = configure<C, CHUNK>(cfg.dynamicSmemBytes);
  if (err != cudaSuccess) return err;
  err = cudaLaunchKernelEx(&cfg, attention_decode_rope_kernel<C, CHUNK>, ra);
  return err != cudaSuccess ? err : cudaGetLastError();
}

template <int C, int CHUNK>
cudaError_t max_clusters(const RopeAttentionArgs& ra, int* clusters) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = launch_config<C, CHUNK>(ra, nullptr, attr);
  cudaError_t err = configure<C, CHUNK>(cfg.dynamicSmemBytes);
  if (err != cudaSuccess) return err;
  return cudaOccupancyMaxActiveClusters(clusters, attention_decode_rope_kernel<C, CHUNK>, &cfg);
}

template <int CHUNK>
cudaError_t launch_chunk(const RopeAttentionArgs& ra, cudaStream_t stream) {
  return ra.cluster_blocks == 8 ? launch<8, CHUNK>(ra, stream) : launch<16, CHUNK>(ra, stream);
}

template <int CHUNK>
cudaError_t max_clusters_chunk(int cluster_blocks, const RopeAttentionArgs& ra, int* clusters) {
  return cluster_blocks == 8 ? max_clusters<8, CHUNK>(ra, clusters)
                             : max_clusters<16, CHUNK>(ra, clusters);
}

}  // namespace

namespace detail {

cudaError_t attention_decode_rope_launch(const RopeAttentionArgs& args, cudaStream_t stream) {
  return args.chunk_keys == 128 ? launch_chunk<128>(args, stream) : launch_chunk<64>(args, stream);
}

cudaError_t attention_decode_rope_max_clusters(int cluster_blocks, int chunk_keys, int num_heads,
                                               int num_kv_heads, int head_dim, int* clusters) {
  RopeAttentionArgs ra;
  ra.attn.batch = 1;
  ra.attn.num_heads = num_heads;
  ra.attn.num_kv_heads = num_kv_heads;
  ra.attn.head_dim = head_dim;
  return chunk_keys == 128 ? max_clusters_chunk<128>(cluster_blocks, ra, clusters)
                           : max_clusters_chunk<64>(cluster_blocks, ra, clusters);
}

}  // namespace detail
}  // namespace ringserve::kernels
