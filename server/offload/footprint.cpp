#include "offload/footprint.h"

#include <algorithm>

namespace ringserve::offload {

Expected<ModelFootprint> compute_footprint(const model::ModelConfig& c) {
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.head_dim <= 0 || c.vocab_size <= 0)
    return make_error(Errc::kInvalidArgument,
                      "model '{}': sizes must be positive (hidden {}, intermediate {}, layers {}, "
                      "heads {}, kv heads {}, head_dim {}, vocab {})",
                      c.name, c.hidden_size, c.intermediate_size, c.num_layers, c.num_heads,
                      c.num_kv_heads, c.head_dim, c.vocab_size);
  if (c.num_heads % c.num_kv_heads != 0)
    return make_error(Errc::kInvalidArgument, "model '{}': {} heads not a multiple of {} kv heads",
                      c.name, c.num_heads, c.num_kv_heads);

  const uint64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const uint64_t Q = static_cast<uint64_t>(c.q_dim()), KV = static_cast<uint64_t>(c.kv_dim());
  // Rows and columns of q, k, v, o, gate, up, down (the engine fuses q/k/v
  // and gate/up, which changes neither the bytes nor the row count).
  const uint64_t qkv_rows = Q + 2 * KV;
  const uint64_t int8 = qkv_rows * H + H * Q + 2 * I * H + H * I;
  const uint64_t rows = qkv_rows + H + 2 * I + H;
  const uint64_t biases = c.attention_bias ? qkv_rows : 0;

  ModelFootprint f;
  f.num_layers = c.num_layers;
  f.layer_int8_bytes = int8;
  f.layer_bytes = int8 + 4 * rows + 4 * biases + 2 * 4 * H;
  f.lm_head_bytes = V * H + 4 * V;
  f.embedding_bytes = 2 * V * H;
  f.embedding_row_bytes = 2 * H;
  f.final_norm_bytes = 4 * H;
  f.kv_bytes_per_token = 2 * static_cast<uint64_t>(c.num_layers) * KV * 2;
  f.largest_linear_elems = std::max({qkv_rows * H, H * Q, 2 * I * H, H * I});
  return f;
}

uint64_t kv_pool_bytes(const ModelFootprint& f, uint64_t tokens) {
  return tokens * f.kv_bytes_per_token;
}

uint64_t estimate_workspace_bytes(const model::ModelConfig& c, const EngineShape& s) {
  const uint64_t B = std::max(s.max_batch, 1), P = std::max(s.max_prefill_tokens, 1);
  const uint64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const uint64_t Q = c.q_dim(), KV = c.kv_dim(), QKV = Q + 2 * KV;
  const uint64_t rows = std::max(B, P);
  const uint64_t gemm_cols = std::max({QKV, 2 * I, H});
  const uint64_t attn_len = std::min<uint64_t>(std::max(s.max_context, 1), P);
  const uint64_t heads = c.num_heads;

  uint64_t bytes = 0;
  bytes += 4 * rows * H;                       // fp32 residual
  bytes += 2 * std::max(rows, 2 * B) * H;      // normed activations
  bytes += 4 * B * QKV;                        // decode GEMV output
  bytes += 4 * P * gemm_cols;                  // prefill GEMM output
  bytes += 2 * rows * Q * 2 + 2 * 2 * P * KV;  // q, attention output, k, v
  bytes += 2 * rows * I;                       // MLP activation
  bytes += 4 * 3 * B * V;                      // logits (two halves) + sampling scratch
  bytes += 6 * heads * attn_len * attn_len;    // prefill scores fp32 + probs bf16
  // Prefill of a layer that is not resident in bf16 dequantizes one linear
  // at a time: the largest (fused gate/up for Qwen2) sizes the buffer.
  bytes += 2 * std::max({QKV * H, H * Q, 2 * I * H, H * I});
  bytes += uint64_t{32} << 20;  // cuBLAS workspace
  return bytes;
}

}  // namespace ringserve::offload
