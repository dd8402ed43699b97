#include "cuda/forward.h"

#include "attention.h"
#include "cuda_check.h"
#include "epilogue.h"
#include "gemm_cublas.h"
#include "gemv_w8a16.h"
#include "norm.h"
#include "quantize.h"
#include "rope_kv.h"
#include "sampling.h"

namespace ringserve::cuda {

using kernels::GemvArgs;
using kernels::GemvEpilogue;

Status Forward::logits_and_sample(int rows, const int32_t* rows_index,
                                  kernels::SampleStrategy sampling, cudaStream_t stream) {
  const auto& c = m_.config();
  // The head's input goes in as two bf16 halves (hi + lo rows): one bf16
  // rounding here would show in every logit. Up to batch 4 the lo rows ride
  // in the same GEMV pass (the mma's N side has 8 columns), so the weights are
  // still read once.
  const size_t hidden = c.hidden_size;
  RS_TRY_STATUS(kernels::rmsnorm_f32_to_bf16(ws_.resid, m_.final_norm(), ws_.xn, rows,
                                             c.hidden_size, static_cast<float>(c.rms_norm_eps),
                                             rows_index, stream, ws_.xn + rows * hidden));
  if (m_.lm_head_bf16()) {
    // The checkpoint's unquantized head: the logits where INT8 rounding would
    // show most (near-ties in greedy decoding).
    RS_TRY_STATUS(kernels::gemm_bf16_nt(cublas_, 2 * rows, c.vocab_size, c.hidden_size, ws_.xn,
                                        c.hidden_size, m_.lm_head_bf16(), c.hidden_size, ws_.logits,
                                        CUDA_R_32F, c.vocab_size, stream));
  } else {
    RS_TRY_STATUS(kernels::gemv_w8a16(gemv_args(m_.lm_head(), ws_.xn, 2 * rows, ws_.logits,
                                                GemvEpilogue::kStoreF32, kernels_.pdl),
                                      m_.lm_head().gemv.for_batch(rows), stream));
  }
  return kernels::sample_tokens_from_halves(ws_.logits, rows, c.vocab_size, ws_.dev_meta.sampling,
                                            ws_.sample_scratch, ws_.sample_rows, ws_.sample_out,
                                            sampling, stream);
}

// RoPE + KV write of layer `layer` for `ntok` rows of the step metadata.
kernels::RopeKvArgs Forward::rope_args(int layer, int ntok) const {
  const auto& c = m_.config();
  kernels::RopeKvArgs r;
  r.ntok = ntok;
  r.num_heads = c.num_heads;
  r.num_kv_heads = c.num_kv_heads;
  r.head_dim = c.head_dim;
  r.rope_theta = static_cast<float>(c.rope_theta);
  r.inv_freq = ws_.rope_inv_freq;
  r.positions = ws_.dev_meta.positions;
  r.slots = ws_.dev_meta.slots;
  r.block_tokens = ws_.limits.block_tokens;
  r.q_out = ws_.q;
  r.k_cache = kv_.k(layer);
  r.v_cache = kv_.v(layer);
  return r;
}

// RoPE, the KV write and attention of layer `layer` for one new token per
// sequence: ws_.qkv_f32 in, ws_.attn out.
Status Forward::decode_attention(int layer, int batch, bool cluster, cudaStream_t stream) {
  const auto& c = m_.config();
  const auto& L = ws_.limits;
  const auto& meta = ws_.dev_meta;
  const int ld_qkv = m_.layers()[layer].qkv.rows;
  kernels::RopeKvArgs r = rope_args(layer, batch);
  r.pdl = kernels_.pdl;
  kernels::DecodeAttentionArgs a;
  a.k_cache = kv_.k(layer);
  a.v_cache = kv_.v(layer);
  a.block_tables = meta.block_tables;
  a.max_blocks_per_seq = L.max_blocks_per_seq;
  a.context_lens = meta.context_lens;
  a.batch = batch;
  a.num_heads = c.num_heads;
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.block_tokens = L.block_tokens;
  a.out = ws_.attn;
  a.pdl = kernels_.pdl;
  if (cluster) {
    kernels::RopeAttentionArgs ra;
    ra.attn = a;
    ra.rope = r;
    ra.qkv = ws_.qkv_f32;
    ra.ld_qkv = ld_qkv;
    ra.cluster_blocks = kernels_.cluster_blocks(batch);
    ra.chunk_keys = kernels_.chunk_keys(batch);
    return kernels::attention_decode_rope(ra, stream);
  }
  RS_TRY_STATUS(kernels::rope_kv_write(ws_.qkv_f32, ld_qkv, r, stream));
  a.q = ws_.q;
  a.split_tokens = L.split_tokens;
  a.max_splits = L.max_splits;
  a.partial_o = ws_.partial_o;
  a.partial_ml = ws_.partial_ml;
  if (L.target_splits > 0) {
    a.split_counters = ws_.split_counters;
    a.target_splits = L.target_splits;
  }
  return kernels::attention_decode(a, stream);
}

Status Forward::decode(int batch, cudaStream_t stream, DecodeAttention attention,
                       kernels::SampleStrategy sampling) {
  const auto& c = m_.config();
  const bool cluster = attention == DecodeAttention::kCluster;
  const int H = c.hidden_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const auto& meta = ws_.dev_meta;
  RS_TRY_STATUS(kernels::embedding_gather(m_.embedding(), c.vocab_size, H, meta.tokens, batch,
                                          ws_.resid, stream));
  if (streamer_) RS_TRY_STATUS(streamer_->begin_pass(stream));
  for (int l = 0; l < c.num_layers; ++l) {
    const DeviceLayer& layer = m_.layers()[l];
    RS_TRY_STATUS(kernels::rmsnorm_f32_to_bf16(ws_.resid, layer.input_norm, ws_.xn, batch, H, eps,
                                               nullptr, stream, nullptr, kernels_.pdl));
    if (streamer_) RS_TRY_STATUS(streamer_->before_layer(l, stream));
    RS_TRY_STATUS(kernels::gemv_w8a16(
        gemv_args(layer.qkv, ws_.xn, batch, ws_.qkv_f32, GemvEpilogue::kStoreF32, kernels_.pdl),
        layer.qkv.gemv.for_batch(batch), stream));
    RS_TRY_STATUS(decode_attention(l, batch, cluster, stream));
    // Not programmatically launched after the cluster attention (see
    // kernels::RopeAttentionArgs: measured slower).
    RS_TRY_STATUS(
        kernels::gemv_w8a16(gemv_args(layer.o, ws_.attn, batch, ws_.resid,
                                      GemvEpilogue::kResidualAddF32, kernels_.pdl && !cluster),
                            layer.o.gemv.for_batch(batch), stream));
    RS_TRY_STATUS(kernels::rmsnorm_f32_to_bf16(ws_.resid, layer.post_attention_norm, ws_.xn, batch,
                                               H, eps, nullptr, stream, nullptr, kernels_.pdl));
    RS_TRY_STATUS(kernels::gemv_w8a16(
        gemv_args(layer.gate_up, ws_.xn, batch, ws_.act, GemvEpilogue::kSiluMulBf16, kernels_.pdl),
        layer.gate_up.gemv.for_batch(batch), stream));
    RS_TRY_STATUS(kernels::gemv_w8a16(gemv_args(layer.down, ws_.act, batch, ws_.resid,
                                                GemvEpilogue::kResidualAddF32, kernels_.pdl),
                                      layer.down.gemv.for_batch(batch), stream));
    if (streamer_) RS_TRY_STATUS(streamer_->after_layer(l, stream));
  }
  if (streamer_) RS_TRY_STATUS(streamer_->end_pass(stream));
  return logits_and_sample(batch, nullptr, sampling, stream);
}

// gemm_out[ntok][l.rows] (fp32) = x[ntok][l.cols] * W^T over the
// integer-valued bf16 weights; the caller's epilogue applies scales.
Status Forward::linear_prefill(const DeviceLinear& l, int ntok, const __nv_bfloat16* x,
                               cudaStream_t stream) {
  const __nv_bfloat16* w = l.q_bf16;
  if (!w) {
    RS_TRY_STATUS(kernels::int8_to_bf16(l.q, ws_.dequant, l.rows, l.cols, l.layout, stream));
    w = ws_.dequant;
  }
  return kernels::gemm_bf16_nt(cublas_, ntok, l.rows, l.cols, x, l.cols, w, l.cols, ws_.gemm_out,
                               CUDA_R_32F, l.rows, stream);
}

Status Forward::prefill(int ntok, int nseq, const int* seq_start, const int* seq_len,
                        kernels::SampleStrategy sampling, cudaStream_t stream) {
  const auto& c = m_.config();
  const auto& L = ws_.limits;
  const int H = c.hidden_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const auto& meta = ws_.dev_meta;
  RS_TRY_STATUS(kernels::embedding_gather(m_.embedding(), c.vocab_size, H, meta.tokens, ntok,
                                          ws_.resid, stream));
  kernels::PrefillAttentionArgs pa;
  pa.q = ws_.q;
  pa.k = ws_.k;
  pa.v = ws_.v;
  pa.out = ws_.attn;
  pa.num_heads = c.num_heads;
  pa.num_kv_heads = c.num_kv_heads;
  pa.head_dim = c.head_dim;
  pa.nseq = nseq;
  pa.seq_start = seq_start;
  pa.seq_len = seq_len;
  pa.heads_per_pass = L.heads_per_pass;
  pa.scores = ws_.scores;
  pa.probs = ws_.probs;
  pa.pointers = ws_.pointers;
  RS_TRY_STATUS(kernels::prefill_attention_prepare(pa, stream));

  if (streamer_) RS_TRY_STATUS(streamer_->begin_pass(stream));
  for (int l = 0; l < c.num_layers; ++l) {
    const DeviceLayer& layer = m_.layers()[l];
    if (streamer_) RS_TRY_STATUS(streamer_->before_layer(l, stream));
    RS_TRY_STATUS(kernels::rmsnorm_f32_to_bf16(ws_.resid, layer.input_norm, ws_.xn, ntok, H, eps,
                                               nullptr, stream));
    RS_TRY_STATUS(linear_prefill(layer.qkv, ntok, ws_.xn, stream));
    kernels::RopeKvArgs r = rope_args(l, ntok);
    r.k_out = ws_.k;
    r.v_out = ws_.v;
    RS_TRY_STATUS(kernels::rope_kv_write(ws_.gemm_out, layer.qkv.rows, layer.qkv.scale,
                                         layer.qkv.bias, r, stream));
    RS_TRY_STATUS(kernels::attention_prefill(pa, cublas_, stream));
    RS_TRY_STATUS(linear_prefill(layer.o, ntok, ws_.attn, stream));
    RS_TRY_STATUS(kernels::residual_add_scaled(ws_.gemm_out, H, layer.o.scale, layer.o.bias,
                                               ws_.resid, ntok, H, stream));
    RS_TRY_STATUS(kernels::rmsnorm_f32_to_bf16(ws_.resid, layer.post_attention_norm, ws_.xn, ntok,
                                               H, eps, nullptr, stream));
    RS_TRY_STATUS(linear_prefill(layer.gate_up, ntok, ws_.xn, stream));
    RS_TRY_STATUS(kernels::silu_mul_scaled(ws_.gemm_out, layer.gate_up.rows, layer.gate_up.scale,
                                           layer.gate_up.bias, ws_.act, ntok, c.intermediate_size,
                                           stream));
    RS_TRY_STATUS(linear_prefill(layer.down, ntok, ws_.act, stream));
    RS_TRY_STATUS(kernels::residual_add_scaled(ws_.gemm_out, H, layer.down.scale, layer.down.bias,
                                               ws_.resid, ntok, H, stream));
    if (streamer_) RS_TRY_STATUS(streamer_->after_layer(l, stream));
  }
  if (streamer_) RS_TRY_STATUS(streamer_->end_pass(stream));
  return logits_and_sample(nseq, meta.last_rows, sampling, stream);
}

}  // namespace ringserve::cuda
