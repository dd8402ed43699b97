// Host-side model weights in the layout every backend starts from:
// linear layers as INT8 with one fp32 scale per output channel, everything
// else (embeddings, norms, biases) in higher precision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.h"

namespace ringserve::model {

// bf16 is stored as its raw 16-bit pattern; conversion helpers below.
inline float bf16_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even, NaN preserved (quietened).
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
    return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// y[out] = scale[out] * sum_in q[out, in] * x[in] + bias[out]
struct QuantLinear {
  int rows = 0;              // output features
  int cols = 0;              // input features
  std::vector<int8_t> q;     // [rows, cols], row-major
  std::vector<float> scale;  // [rows]
  std::vector<float> bias;   // [rows] or empty

  size_t weight_bytes() const { return q.size() + scale.size() * sizeof(float); }
};

// The token embedding table: kept in bf16 (its source precision for the
// models we serve) so a 7B model's 152064 x 3584 table costs 1.1 GB, not 2.2.
struct Embedding {
  int rows = 0;                // vocab
  int cols = 0;                // hidden
  std::vector<uint16_t> bf16;  // [rows, cols]

  void gather_row(int32_t token, float* out) const {
    const uint16_t* row = bf16.data() + static_cast<size_t>(token) * cols;
    for (int i = 0; i < cols; ++i) out[i] = bf16_to_float(row[i]);
  }
};

struct LayerWeights {
  std::vector<float> input_norm;           // [hidden]
  std::vector<float> post_attention_norm;  // [hidden]
  QuantLinear q_proj, k_proj, v_proj, o_proj;
  QuantLinear gate_proj, up_proj, down_proj;
};

struct ModelWeights {
  ModelConfig config;
  Embedding embed_tokens;
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  QuantLinear lm_head;            // [vocab, hidden]; quantized from embed when tied
  // The output head unquantized ([vocab, hidden] bf16), when the loader
  // keeps it; rows == 0 otherwise. Logits are where INT8 rounding shows
  // most (greedy picks between near-ties), so the CPU reference computes
  // them from this when present, or from embed_tokens when tied.
  Embedding lm_head_bf16;

  size_t linear_bytes() const;  // INT8 weights + scales streamed per decode step
};

}  // namespace ringserve::model
