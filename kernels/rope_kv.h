// Post-processing of the fused q/k/v projection: bias and per-row scale (when
// the producer left them out), RoPE (Hugging Face Qwen2 rotate-half) on q and
// k, and the write of k and v into the paged KV cache. head_dim <= 256.
//
// qkv row layout: [q (H*D) | k (KVH*D) | v (KVH*D)].
// KV cache layout per layer: [block][kv_head][block_tokens][head_dim] bf16, so
// the keys of one head inside a block are contiguous.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#ifndef __CUDACC__
#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

// Element offset of token `offset` of cache block `block`, kv head
// `kv_head`, in one layer's K (or V) pool.
__host__ __device__ inline size_t kv_cache_offset(int block, int kv_head, int offset,
                                                  int num_kv_heads, int block_tokens,
                                                  int head_dim) {
  return ((static_cast<size_t>(block) * num_kv_heads + kv_head) * block_tokens + offset) * head_dim;
}

struct RopeKvArgs {
  int ntok = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // even
  float rope_theta = 10000.0f;
  // Device table [head_dim / 2] of bf16-rounded inverse frequencies, from
  // model::rope_inv_freq() uploaded once at start-up. Null: every block computes
  // them (double pow per entry; the slower path, same values).
  const float* inv_freq = nullptr;
  const int32_t* positions = nullptr;  // [ntok]
  const int32_t* slots = nullptr;      // [ntok]: block * block_tokens + offset
  int block_tokens = 0;
  __nv_bfloat16* q_out = nullptr;    // [ntok, H*D]
  __nv_bfloat16* k_cache = nullptr;  // this layer's pool
  __nv_bfloat16* v_cache = nullptr;
  __nv_bfloat16* k_out = nullptr;  // optional contiguous copy [ntok, KVH*D] (prefill)
  __nv_bfloat16* v_out = nullptr;
  bool pdl = false;  // programmatic dependent launch (sm_90; see common.cuh)
};

#ifndef __CUDACC__
// Decode: qkv already holds acc * scale + bias (the GEMV epilogue did it).
Status rope_kv_write(const float* qkv, int ld_qkv, const RopeKvArgs& args, cudaStream_t stream);

// Prefill: qkv is the raw fp32 GEMM output over integer-valued bf16 weights;
// the per-column scale and the bias are applied here.
Status rope_kv_write(const float* qkv, int ld_qkv, const float* scale, const float* bias,
                     const RopeKvArgs& args, cudaStream_t stream);
#endif

namespace detail {
cudaError_t rope_kv_launch(const float* qkv, int ld_qkv, const float* scale, const float* bias,
                           const RopeKvArgs& args, cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
