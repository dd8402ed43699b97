// Grouped-query attention. Decode reads keys and values from the paged KV
// cache (see rope_kv.h for its layout), split along the context so a long
// sequence spreads over many SMs; prefill is causal attention over the prompt
// through cuBLAS batched GEMMs (scores, then probabilities x values) with a
// masked softmax between them.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "rope_kv.h"

#ifndef __CUDACC__
#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

constexpr int kAttentionMaxGroup = 8;  // q heads per kv head
constexpr int kAttentionMaxHeadDim = 256;
constexpr int kAttentionMaxSplitTokens = 256;

struct DecodeAttentionArgs {
  const __nv_bfloat16* q = nullptr;        // [batch, H*D], RoPE applied
  const __nv_bfloat16* k_cache = nullptr;  // this layer's pool
  const __nv_bfloat16* v_cache = nullptr;
  const int32_t* block_tables = nullptr;  // [batch, max_blocks_per_seq]
  int max_blocks_per_seq = 0;
  const int32_t* context_lens = nullptr;  // [batch], keys to attend (current token included)
  int batch = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int block_tokens = 0;
  // The grid always covers max_splits splits so one CUDA graph serves every
  // context length; splits past a sequence's length exit at once.
  int split_tokens = 16;
  int max_splits = 0;
  float* partial_o = nullptr;    // [batch, H, max_splits, D]
  float* partial_ml = nullptr;   // [batch, H, max_splits, 2]
  __nv_bfloat16* out = nullptr;  // [batch, H*D]
  bool pdl = false;              // programmatic dependent launch (sm_90; see common.cuh)
  // Fused path, taken when split_counters is set: each sequence's split
  // length follows its context, decode_split_tokens(n, split_tokens,
  // target_splits) (split_tokens is then the minimum), and the last block to
  // finish a (sequence, kv head) merges its splits, so no combine kernel
  // runs. split_counters: [batch * num_kv_heads] ints, zero before the first
  // launch; every merge resets its counter, so graph replays stay valid.
  // max_splits must be at least decode_max_splits(max context, ...).
  // Without split_counters: fixed split_tokens and a separate combine kernel.
  int* split_counters = nullptr;
  int target_splits = 32;
};

// Keys per split of the fused path for a sequence of n keys: about
// n / target_splits, rounded up to a multiple of 16, at least min_split and at
// most kAttentionMaxSplitTokens.
__host__ __device__ inline int decode_split_tokens(int n, int min_split, int target_splits) {
  int len = (n + target_splits - 1) / target_splits;
  len = (len + 15) / 16 * 16;
  len = len < min_split ? min_split : len;
  return len > kAttentionMaxSplitTokens ? kAttentionMaxSplitTokens : len;
}

// Splits the fused path needs for any context up to max_context: at most
// target_splits while the split length is not capped, ceil(n / max split)
// beyond, and never more than ceil(n / min_split).
__host__ __device__ inline int decode_max_splits(int max_context, int min_split,
                                                 int target_splits) {
  const int capped = (max_context + kAttentionMaxSplitTokens - 1) / kAttentionMaxSplitTokens;
  const int uncapped = (max_context + min_split - 1) / min_split;
  const int bound = target_splits > capped ? target_splits : capped;
  return bound < uncapped ? bound : uncapped;
}

#ifndef __CUDACC__
Status attention_decode(const DecodeAttentionArgs& args, cudaStream_t stream);
#endif

// Decode attention with RoPE and the new token's KV write fused in, for
// compute capability 9.0 (thread block clusters). One cluster of
// cluster_blocks blocks per (sequence, kv head) divides the context between
// its blocks; each block rotates its query heads itself, the block holding
// the newest key rotates that key and writes it and its value to the cache,
// and the blocks merge their partial softmax sums through distributed shared
// memory: one launch per layer where the unfused path needs rope_kv_write
// and attention_decode, and no split results or counters in global memory.
// attn.pdl is ignored: launched with programmatic dependent launch, or
// followed by a kernel launched so, the decode step measured slower on the
// H200 (321-329 against 344 tok/s at batch 1), so the kernel is always
// launched normally and the caller should launch its successor normally too.
struct RopeAttentionArgs {
  // q_out, k_out, v_out and ntok of rope are unused (the batch is attn.batch);
  // so are attn.q and its split fields. rope.k_cache / v_cache must be
  // attn's, and the block sizes the same.
  DecodeAttentionArgs attn;
  RopeKvArgs rope;
  // [batch, ld_qkv]: q | k | v of the new tokens, scale and bias applied.
  const float* qkv = nullptr;
  int ld_qkv = 0;
  int cluster_blocks = 16;  // 8 (portable) or 16
  // Keys a block stages in shared memory at a time: 64 or 128 (see
  // attention_chunk_keys).
  int chunk_keys = 64;
};

// The scores are tensor-core mmas over 16 head dimensions at a time.
constexpr int kRopeAttentionHeadDimMultiple = 16;

// Blocks per cluster for a decode step of `batch` sequences: 16 while one
// block per (sequence, kv head, block) fits on the GPU's `sms`
// multiprocessors, else 8. On the H200 (132 SMs, 4 kv heads) clusters of 16
// were faster at batch 1 (9.3 against 11.1 us a layer at context 768, 19.0
// against 30.6 at 4096) and clusters of 8 at batch 4 (10.6 against 17.5 us
// at context 512, 13.3 against 18.5 at 768), where 256 blocks of 16-block
// clusters no longer ran at once.
constexpr int attention_cluster_blocks(int batch, int num_kv_heads, int sms) {
  return batch * num_kv_heads * 16 <= sms ? 16 : 8;
}

// Keys per chunk for a launch of `clusters` clusters (batch * kv heads) of
// `cluster_blocks` blocks on a GPU of `sms` multiprocessors that holds
// `resident_clusters_at_128` clusters of 128-key chunks at once
// (attention_decode_rope_resident_clusters; 0 where they do not fit).
// 128-key chunks halve the chunks a block walks at long contexts, but take
// about twice the shared memory, so a block needs an SM to itself. On the
// H200 (2026-12-07) they took a layer from 16.5 to 13.5 us at context 4096
// and from 52.0 to 40.4 us at 16384 (batch 1: 64 blocks in clusters of 16),
// within 0.06 us of 64-key chunks at 512 and 768; at batch 4 (128 blocks in
// clusters of 8) they took 8.4 to 13.8 us at 512, most likely because the
// clusters no longer all fitted at once. So they are chosen only where every
// cluster stays resident and the launch fills at most half the SMs, as far
// as they were measured faster.
constexpr int attention_chunk_keys(int clusters, int cluster_blocks, int sms,
                                   int resident_clusters_at_128) {
  return clusters <= resident_clusters_at_128 && 2 * clusters * cluster_blocks <= sms ? 128 : 64;
}

#ifndef __CUDACC__
// Whether attention_decode_rope can run this shape on `device` with
// cluster_blocks blocks per cluster: compute capability 9.0 or newer, a
// head_dim that is a multiple of kRopeAttentionHeadDimMultiple, and at least
// one such cluster of 64-key chunks fits (shared memory, cluster size).
bool attention_decode_rope_supported(int device, int cluster_blocks, int num_heads,
                                     int num_kv_heads, int head_dim);
// Clusters of this shape with `chunk_keys`-key chunks that `device` holds at
// once; 0 where none fits, or without clusters.
int attention_decode_rope_resident_clusters(int device, int cluster_blocks, int chunk_keys,
                                            int num_heads, int num_kv_heads, int head_dim);
Status attention_decode_rope(const RopeAttentionArgs& args, cudaStream_t stream);
#endif

struct PrefillAttentionArgs {
  // Packed prompt tokens of nseq sequences, positions 0..len-1 each.
  const __nv_bfloat16* q = nullptr;  // [ntok, H*D]
  const __nv_bfloat16* k = nullptr;  // [ntok, KVH*D]
  const __nv_bfloat16* v = nullptr;
  __nv_bfloat16* out = nullptr;  // [ntok, H*D]
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int nseq = 0;
  const int* seq_start = nullptr;  // host arrays [nseq]
  const int* seq_len = nullptr;
  // Heads whose scores are materialised at once (0 = all): bounds the
  // workspace for long prompts.
  int heads_per_pass = 0;
  float* scores = nullptr;         // workspace: heads_per_pass * max_len^2 floats
  __nv_bfloat16* probs = nullptr;  // workspace: heads_per_pass * max_len^2
  void** pointers = nullptr;       // device workspace: prefill_pointer_count(H, nseq)
};

inline size_t prefill_pointer_count(int num_heads, int nseq) {
  return static_cast<size_t>(6) * num_heads * nseq;
}

#ifndef __CUDACC__
// Fills args.pointers for the batched GEMMs; the same pointers serve every
// layer, so this runs once per prefill step.
Status prefill_attention_prepare(const PrefillAttentionArgs& args, cudaStream_t stream);
Status attention_prefill(const PrefillAttentionArgs& args, cublasHandle_t cublas,
                         cudaStream_t stream);
#endif

namespace detail {
cudaError_t attention_decode_launch(const DecodeAttentionArgs& args, cudaStream_t stream);
cudaError_t attention_decode_rope_launch(const RopeAttentionArgs& args, cudaStream_t stream);
// Clusters of the launch that can be resident at once (0: none fits).
cudaError_t attention_decode_rope_max_clusters(int cluster_blocks, int chunk_keys, int num_heads,
                                               int num_kv_heads, int head_dim, int* clusters);
cudaError_t prefill_pointers_launch(const PrefillAttentionArgs& args, int seq, cudaStream_t stream);
cudaError_t causal_softmax_launch(const float* scores, __nv_bfloat16* probs, int T, int rows,
                                  cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
