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
};

#ifndef __CUDACC__
Status attention_decode(const DecodeAttentionArgs& args, cudaStream_t stream);
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
cudaError_t prefill_pointers_launch(const PrefillAttentionArgs& args, int seq, cudaStream_t stream);
cudaError_t causal_softmax_launch(const float* scores, __nv_bfloat16* probs, int T, int rows,
                                  cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
