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

constexpr int kThreads = 128;
// Keys staged in shared memory at a time: a block with more keys than this
// (contexts beyond cluster_blocks * kChunk) walks them in chunks with an
// online softmax.
constexpr int kChunk = 64;

// Dynamic shared memory: keys and values of two chunks (bf16), the rotated
// queries, the chunk's probabilities, and the block's unnormalised output
// (read by the other blocks of the cluster when merging).
size_t smem_bytes(int head_dim, int heads) {
  return sizeof(__nv_bfloat16) * 4 * kChunk * head_dim +
         sizeof(float) * (2 * heads * head_dim + heads * kChunk);
}

// The device code exists for sm_90 and newer only (clusters); older targets
// get an empty kernel, which the host never launches there.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
constexpr int kMaxHalf = kAttentionMaxHeadDim / 2;
constexpr int kDimsPerThread = kAttentionMaxHeadDim / kThreads;
constexpr int kSlices = 8;  // lanes sharing one key's dot products

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;" ::: "memory");
}

__device__ __forceinline__ void cp_async_wait_all_but_one() {
  asm volatile("cp.async.wait_group 1;" ::: "memory");
}

__device__ __forceinline__ float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16(x));
}

// Starts copying keys [c0, c1) of (sequence b, kv head kvh) from the paged
// cache into rows 0.. of kbuf and vbuf, 16 bytes per copy. The row of key
// `skip` (the new token, whose cache slot is written by this kernel) is left
// out.
__device__ void stage_chunk(const DecodeAttentionArgs& a, int b, int kvh, int c0, int c1, int skip,
                            __nv_bfloat16* kbuf, __nv_bfloat16* vbuf) {
  const int D = a.head_dim, pieces = D / 8, BT = a.block_tokens;
  const int32_t* table = a.block_tables + static_cast<size_t>(b) * a.max_blocks_per_seq;
  for (int idx = threadIdx.x; idx < (c1 - c0) * pieces; idx += kThreads) {
    const int j = idx / pieces, part = idx % pieces, pos = c0 + j;
    if (pos == skip) continue;
    const size_t src =
        kv_cache_offset(table[pos / BT], kvh, pos % BT, a.num_kv_heads, BT, D) + part * 8;
    cp_async16(kbuf + j * D + part * 8, a.k_cache + src);
    cp_async16(vbuf + j * D + part * 8, a.v_cache + src);
  }
}

#endif

// grid (C, kv heads, batch), clusters of C blocks along x: block `rank` of
// the cluster of (b, kvh) attends keys [rank * per, (rank + 1) * per).
template <int C>
__global__ void __launch_bounds__(kThreads) attention_decode_rope_kernel(RopeAttentionArgs ra) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const DecodeAttentionArgs& a = ra.attn;
  const RopeKvArgs& r = ra.rope;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int kvh = blockIdx.y, b = blockIdx.z;
  const int H = a.num_heads, KVH = a.num_kv_heads, D = a.head_dim, G = H / KVH, half = D / 2;
  const int BT = a.block_tokens;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Two chunks of keys and values, [kChunk][D] each: the next chunk streams
  // in while this one is used.
  auto* kv0 = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  float* q = reinterpret_cast<float*>(kv0 + 4 * kChunk * D);  // [G][D]
  float* p = q + G * D;                                       // [G][kChunk]
  float* acc_out = p + G * kChunk;                            // [G][D]
  auto kbuf = [&](int c) { return kv0 + (c & 1) * 2 * kChunk * D; };
  auto vbuf = [&](int c) { return kbuf(c) + kChunk * D; };
  __shared__ float cos_t[kMaxHalf], sin_t[kMaxHalf];
  __shared__ float m_s[kAttentionMaxGroup], l_s[kAttentionMaxGroup], corr_s[kAttentionMaxGroup];
  __shared__ __align__(16) __nv_bfloat16 new_k[kAttentionMaxHeadDim], new_v[kAttentionMaxHeadDim];

  // The first chunk is on its way, and the rotation table built, before
  // the queries are read.
  const int n = a.context_lens[b];
  const int per = (n + C - 1) / C;
  const int k0 = min(n, rank * per), k1 = min(n, k0 + per);
  const int nchunks = (k1 - k0 + kChunk - 1) / kChunk;
  const int new_key = n - 1;  // the token this step adds: its K and V are in qkv
  const bool owns_new = new_key >= k0 && new_key < k1;
  const int skip = owns_new ? new_key : -1;
  if (nchunks > 0) stage_chunk(a, b, kvh, k0, min(k1, k0 + kChunk), skip, kbuf(0), vbuf(0));
  cp_async_commit();
  detail::rope_table(static_cast<float>(r.positions[b]), r.inv_freq, r.rope_theta, D, cos_t, sin_t);
  if (threadIdx.x < kAttentionMaxGroup) {
    m_s[threadIdx.x] = -INFINITY;
    l_s[threadIdx.x] = 0.0f;
  }
  __syncthreads();

  // Queries rotated and rounded to bf16, as rope_kv_write stores them.
  const float* row = ra.qkv + static_cast<size_t>(b) * ra.ld_qkv;
  for (int idx = threadIdx.x; idx < G * half; idx += kThreads) {
    const int g = idx / half, i = idx % half;
    const float* x = row + (kvh * G + g) * D;
    const float2 rot = detail::rope_rotate(x[i], x[i + half], cos_t[i], sin_t[i]);
    q[g * D + i] = round_bf16(rot.x);
    q[g * D + i + half] = round_bf16(rot.y);
  }
  if (owns_new) {
    const int slot = r.slots[b];
    const size_t dst = kv_cache_offset(slot / BT, kvh, slot % BT, KVH, BT, D);
    const float* kx = row + (H + kvh) * D;
    const float* vx = row + (H + KVH + kvh) * D;
    for (int i = threadIdx.x; i < half; i += kThreads) {
      const float2 rot = detail::rope_rotate(kx[i], kx[i + half], cos_t[i], sin_t[i]);
      const __nv_bfloat16 o1 = __float2bfloat16(rot.x);
      const __nv_bfloat16 o2 = __float2bfloat16(rot.y);
      new_k[i] = o1;
      new_k[i + half] = o2;
      r.k_cache[dst + i] = o1;
      r.k_cache[dst + i + half] = o2;
    }
    for (int d = threadIdx.x; d < D; d += kThreads) {
      const __nv_bfloat16 v = __float2bfloat16(vx[d]);
      new_v[d] = v;
      r.v_cache[dst + d] = v;
    }
  }

  const float softmax_scale = rsqrtf(static_cast<float>(D));
  const int warp = threadIdx.x / detail::kWarp, lane = threadIdx.x % detail::kWarp;
  const int slice = threadIdx.x % kSlices, dps = D / kSlices;  // dims per slice
  float acc[kDimsPerThread][kAttentionMaxGroup];
#pragma unroll
  for (int j = 0; j < kDimsPerThread; ++j)
#pragma unroll
    for (int g = 0; g < kAttentionMaxGroup; ++g) acc[j][g] = 0.0f;

  for (int c = 0; c < nchunks; ++c) {
    const int c0 = k0 + c * kChunk, len = min(kChunk, k1 - c0);
    if (c + 1 < nchunks) {
      // Its buffer was last read in chunk c - 1, which ended in a barrier.
      stage_chunk(a, b, kvh, c0 + kChunk, min(k1, c0 + 2 * kChunk), skip, kbuf(c + 1), vbuf(c + 1));
      cp_async_commit();
      cp_async_wait_all_but_one();
    } else {
      cp_async_wait_all();
    }
    __syncthreads();  // every thread's copies, the queries and new_k / new_v
    __nv_bfloat16* kb = kbuf(c);
    __nv_bfloat16* vb = vbuf(c);
    if (owns_new && new_key < c0 + len) {
      for (int d = threadIdx.x; d < D; d += kThreads) {
        kb[(new_key - c0) * D + d] = new_k[d];
        vb[(new_key - c0) * D + d] = new_v[d];
      }
      __syncthreads();
    }

    // Scores: kSlices lanes per key, each over D / kSlices dimensions.
    for (int i0 = 0; i0 < len; i0 += kThreads / kSlices) {
      const int i = i0 + threadIdx.x / kSlices;
      float s[kAttentionMaxGroup];
#pragma unroll
      for (int g = 0; g < kAttentionMaxGroup; ++g) s[g] = 0.0f;
      if (i < len) {
        const __nv_bfloat16* kr = kb + i * D + slice * dps;
        const float* qs = q + slice * dps;
        if (dps % 8 == 0) {
          for (int d = 0; d < dps; d += 8) {
            const uint4 kv = *reinterpret_cast<const uint4*>(kr + d);
            const uint32_t w[4] = {kv.x, kv.y, kv.z, kv.w};
            float kf[8];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              kf[2 * e] = detail::bf16_lo(w[e]);
              kf[2 * e + 1] = detail::bf16_hi(w[e]);
            }
#pragma unroll
            for (int g = 0; g < kAttentionMaxGroup; ++g)
              if (g < G) {
                const float4 qa = *reinterpret_cast<const float4*>(qs + g * D + d);
                const float4 qb = *reinterpret_cast<const float4*>(qs + g * D + d + 4);
                s[g] += qa.x * kf[0] + qa.y * kf[1] + qa.z * kf[2] + qa.w * kf[3] + qb.x * kf[4] +
                        qb.y * kf[5] + qb.z * kf[6] + qb.w * kf[7];
              }
          }
        } else {
          for (int d = 0; d < dps; ++d) {
            const float kf = __bfloat162float(kr[d]);
#pragma unroll
            for (int g = 0; g < kAttentionMaxGroup; ++g)
              if (g < G) s[g] += qs[g * D + d] * kf;
          }
        }
      }
#pragma unroll
      for (int g = 0; g < kAttentionMaxGroup; ++g)
#pragma unroll
        for (int o = 1; o < kSlices; o <<= 1) s[g] += __shfl_xor_sync(0xffffffffu, s[g], o);
      if (i < len && slice == 0) {
#pragma unroll
        for (int g = 0; g < kAttentionMaxGroup; ++g)
          if (g < G) p[g * kChunk + i] = s[g] * softmax_scale;
      }
    }
    __syncthreads();

    // Online softmax, one warp per head: rescale what earlier chunks summed.
    for (int g = warp; g < G; g += kThreads / detail::kWarp) {
      float* pg = p + g * kChunk;
      float mx = -INFINITY;
      for (int i = lane; i < len; i += detail::kWarp) mx = fmaxf(mx, pg[i]);
      mx = detail::warp_max(mx);
      const float m_old = m_s[g], m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
      for (int i = lane; i < len; i += detail::kWarp) {
        const float e = expf(pg[i] - m_new);
        pg[i] = e;
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

    // Values: one head dimension per thread (two for head_dim 256).
#pragma unroll
    for (int j = 0; j < kDimsPerThread; ++j) {
      const int d = threadIdx.x + j * kThreads;
      if (d >= D) continue;
#pragma unroll
      for (int g = 0; g < kAttentionMaxGroup; ++g)
        if (g < G) acc[j][g] *= corr_s[g];
#pragma unroll 8
      for (int i = 0; i < len; ++i) {
        const float v = __bfloat162float(vb[i * D + d]);
#pragma unroll
        for (int g = 0; g < kAttentionMaxGroup; ++g)
          if (g < G) acc[j][g] += p[g * kChunk + i] * v;
      }
    }
    __syncthreads();  // before kbuf(c), vbuf(c) and p are written again
  }

#pragma unroll
  for (int j = 0; j < kDimsPerThread; ++j) {
    const int d = threadIdx.x + j * kThreads;
    if (d >= D) continue;
#pragma unroll
    for (int g = 0; g < kAttentionMaxGroup; ++g)
      if (g < G) acc_out[g * D + d] = acc[j][g];
  }
  // Every block's m_s, l_s and acc_out, visible to the whole cluster.
  cluster.sync();

  // This block's share of the G * D outputs: rescale each block's sums to
  // the common maximum, add, normalise. A block without keys has m = -inf
  // and weighs nothing; with no keys at all the output is zero.
  for (int idx = rank * kThreads + threadIdx.x; idx < G * D; idx += C * kThreads) {
    const int g = idx / D, d = idx % D;
    float m[C];
    float mmax = -INFINITY;
#pragma unroll
    for (int k = 0; k < C; ++k) {
      m[k] = cluster.map_shared_rank(m_s, k)[g];
      mmax = fmaxf(mmax, m[k]);
    }
    float num = 0.0f, den = 0.0f;
    if (mmax != -INFINITY) {
#pragma unroll
      for (int k = 0; k < C; ++k) {
        const float w = expf(m[k] - mmax);
        num += w * cluster.map_shared_rank(acc_out, k)[idx];
        den += w * cluster.map_shared_rank(l_s, k)[g];
      }
    }
    a.out[(static_cast<size_t>(b) * H + kvh * G + g) * D + d] =
        __float2bfloat16(den > 0.0f ? num / den : 0.0f);
  }
  // No block may leave while another still reads its shared memory.
  cluster.sync();
#endif
}

template <int C>
cudaLaunchConfig_t launch_config(const RopeAttentionArgs& ra, cudaStream_t stream,
                                 cudaLaunchAttribute (&attr)[1]) {
  const auto& a = ra.attn;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(C, a.num_kv_heads, a.batch);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem_bytes(a.head_dim, a.num_heads / a.num_kv_heads);
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
// without graphs this runs 28 times a decode step.
template <int C>
cudaError_t configure(size_t smem) {
  static std::mutex mu;
  static std::map<int, size_t> granted;  // device -> the largest size asked for
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  std::lock_guard lock(mu);
  auto it = granted.find(device);
  if (it != granted.end() && it->second >= smem) return cudaSuccess;
  auto kernel = attention_decode_rope_kernel<C>;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
  if (err == cudaSuccess && C > 8)
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (err == cudaSuccess) granted[device] = smem;
  return err;
}

template <int C>
cudaError_t launch(const RopeAttentionArgs& ra, cudaStream_t stream) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = launch_config<C>(ra, stream, attr);
  cudaError_t err = configure<C>(cfg.dynamicSmemBytes);
  if (err != cudaSuccess) return err;
  err = cudaLaunchKernelEx(&cfg, attention_decode_rope_kernel<C>, ra);
  return err != cudaSuccess ? err : cudaGetLastError();
}

template <int C>
cudaError_t max_clusters(const RopeAttentionArgs& ra, int* clusters) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = launch_config<C>(ra, nullptr, attr);
  cudaError_t err = configure<C>(cfg.dynamicSmemBytes);
  if (err != cudaSuccess) return err;
  return cudaOccupancyMaxActiveClusters(clusters, attention_decode_rope_kernel<C>, &cfg);
}

}  // namespace

namespace detail {

cudaError_t attention_decode_rope_launch(const RopeAttentionArgs& args, cudaStream_t stream) {
  return args.cluster_blocks == 8 ? launch<8>(args, stream) : launch<16>(args, stream);
}

cudaError_t attention_decode_rope_max_clusters(int cluster_blocks, int num_heads, int num_kv_heads,
                                               int head_dim, int* clusters) {
  RopeAttentionArgs ra;
  ra.attn.batch = 1;
  ra.attn.num_heads = num_heads;
  ra.attn.num_kv_heads = num_kv_heads;
  ra.attn.head_dim = head_dim;
  return cluster_blocks == 8 ? max_clusters<8>(ra, clusters) : max_clusters<16>(ra, clusters);
}

}  // namespace detail
}  // namespace ringserve::kernels
