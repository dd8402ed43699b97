// Device inputs of a decode attention launch at the 7B's heads (28 query
// heads, 4 KV heads, head_dim 128, 16-token blocks): random bf16 KV for
// `batch` sequences of `context` keys each, their block tables, the partial
// buffers, and the launch arguments over them. Shared by the per-launch and
// the in-graph benchmarks.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <vector>

#include "attention.h"
#include "bench.h"
#include "model/rope_frequencies.h"

namespace ringserve::bench {

class AttentionInputs {
 public:
  static constexpr int kHeads = 28, kKvHeads = 4, kHeadDim = 128, kBlockTokens = 16;
  static constexpr int kQkvWidth = (kHeads + 2 * kKvHeads) * kHeadDim;
  static constexpr double kRopeTheta = 1000000.0;

  // split < 0: the fused path with about -split splits; split > 0: fixed
  // splits of `split` keys and the combine kernel.
  AttentionInputs(int batch, int context, int split) {
    const bool fused = split < 0;
    const int max_blocks = context / kBlockTokens + 1;
    const size_t cache =
        static_cast<size_t>(batch) * max_blocks * kKvHeads * kBlockTokens * kHeadDim;
    const size_t q_elems = static_cast<size_t>(batch) * kHeads * kHeadDim;
    k_ = alloc(2 * cache, 1);
    v_ = alloc(2 * cache, 2);
    q_ = alloc(2 * q_elems, 3);
    std::vector<int32_t> tables(static_cast<size_t>(batch) * max_blocks), lens(batch, context);
    for (size_t i = 0; i < tables.size(); ++i) tables[i] = static_cast<int32_t>(i);
    tables_ = upload(tables);
    lens_ = upload(lens);
    const int max_splits =
        fused ? kernels::decode_max_splits(context, 16, -split) : (context + split - 1) / split;
    partial_o_ = alloc(4 * static_cast<size_t>(batch) * kHeads * max_splits * kHeadDim, 0);
    partial_ml_ = alloc(4 * static_cast<size_t>(batch) * kHeads * max_splits * 2, 0);
    out_ = alloc(2 * q_elems, 0);
    counters_ = alloc(4 * static_cast<size_t>(batch) * kKvHeads, 0);
    check(cudaMemset(counters_, 0, 4 * static_cast<size_t>(batch) * kKvHeads), "counters");

    a_.q = static_cast<__nv_bfloat16*>(q_);
    a_.k_cache = static_cast<__nv_bfloat16*>(k_);
    a_.v_cache = static_cast<__nv_bfloat16*>(v_);
    a_.block_tables = static_cast<int32_t*>(tables_);
    a_.max_blocks_per_seq = max_blocks;
    a_.context_lens = static_cast<int32_t*>(lens_);
    a_.batch = batch;
    a_.num_heads = kHeads;
    a_.num_kv_heads = kKvHeads;
    a_.head_dim = kHeadDim;
    a_.block_tokens = kBlockTokens;
    a_.split_tokens = fused ? 16 : split;
    a_.max_splits = max_splits;
    if (fused) {
      a_.split_counters = static_cast<int*>(counters_);
      a_.target_splits = -split;
    }
    a_.partial_o = static_cast<float*>(partial_o_);
    a_.partial_ml = static_cast<float*>(partial_ml_);
    a_.out = static_cast<__nv_bfloat16*>(out_);

    // The fused RoPE + attention kernel's inputs: a qkv row per sequence,
    // whose newest key goes at the end of the sequence's own blocks.
    qkv_ = alloc(4 * static_cast<size_t>(batch) * kQkvWidth, 4);
    std::vector<int32_t> pos(batch, context - 1), slot(batch);
    for (int b = 0; b < batch; ++b) slot[b] = b * max_blocks * kBlockTokens + context - 1;
    pos_ = upload(pos);
    slots_ = upload(slot);
    const auto freq = model::rope_inv_freq(kHeadDim, kRopeTheta);
    freq_ = alloc(4 * freq.size(), 0);
    check(cudaMemcpy(freq_, freq.data(), 4 * freq.size(), cudaMemcpyHostToDevice), "freq");
    r_.ntok = batch;
    r_.num_heads = kHeads;
    r_.num_kv_heads = kKvHeads;
    r_.head_dim = kHeadDim;
    r_.rope_theta = static_cast<float>(kRopeTheta);
    r_.inv_freq = static_cast<float*>(freq_);
    r_.positions = static_cast<int32_t*>(pos_);
    r_.slots = static_cast<int32_t*>(slots_);
    r_.block_tokens = kBlockTokens;
    r_.q_out = static_cast<__nv_bfloat16*>(q_);
    r_.k_cache = static_cast<__nv_bfloat16*>(k_);
    r_.v_cache = static_cast<__nv_bfloat16*>(v_);
  }
  ~AttentionInputs() {
    for (void* p : {k_, v_, q_, tables_, lens_, partial_o_, partial_ml_, out_, counters_, qkv_,
                    pos_, slots_, freq_})
      cudaFree(p);
  }
  AttentionInputs(const AttentionInputs&) = delete;
  AttentionInputs& operator=(const AttentionInputs&) = delete;

  const kernels::DecodeAttentionArgs& args() const { return a_; }
  // rope_kv_write's arguments over qkv(): q into q(), the new keys and
  // values into the cache.
  const kernels::RopeKvArgs& rope_args() const { return r_; }
  const float* qkv() const { return static_cast<float*>(qkv_); }
  // kernels::attention_decode_rope over the same inputs.
  kernels::RopeAttentionArgs fused_args(int cluster_blocks, int chunk_keys = 64) const {
    kernels::RopeAttentionArgs ra;
    ra.attn = a_;
    ra.rope = r_;
    ra.qkv = qkv();
    ra.ld_qkv = kQkvWidth;
    ra.cluster_blocks = cluster_blocks;
    ra.chunk_keys = chunk_keys;
    return ra;
  }
  __nv_bfloat16* q() const { return static_cast<__nv_bfloat16*>(q_); }
  __nv_bfloat16* k_cache() const { return static_cast<__nv_bfloat16*>(k_); }
  __nv_bfloat16* v_cache() const { return static_cast<__nv_bfloat16*>(v_); }

 private:
  // Random contents (seed > 0) or as allocated (outputs).
  static void* alloc(size_t bytes, uint32_t seed) {
    void* p = dmalloc(bytes);
    if (seed) fill_random(p, bytes, seed);
    return p;
  }
  static void* upload(const std::vector<int32_t>& v) {
    void* p = alloc(4 * v.size(), 0);
    check(cudaMemcpy(p, v.data(), 4 * v.size(), cudaMemcpyHostToDevice), "upload");
    return p;
  }

  void *k_ = nullptr, *v_ = nullptr, *q_ = nullptr, *tables_ = nullptr, *lens_ = nullptr;
  void *partial_o_ = nullptr, *partial_ml_ = nullptr, *out_ = nullptr, *counters_ = nullptr;
  void *qkv_ = nullptr, *pos_ = nullptr, *slots_ = nullptr, *freq_ = nullptr;
  kernels::DecodeAttentionArgs a_;
  kernels::RopeKvArgs r_;
};

}  // namespace ringserve::bench
