// Model shapes the planner tests use.
#pragma once

#include "model/config.h"

namespace ringserve::offload::testing {

// DeepSeek-R1-Distill-Qwen-7B (Qwen2): the model small-VRAM mode is for.
inline model::ModelConfig qwen7b() {
  model::ModelConfig c;
  c.name = "deepseek-r1-distill-qwen-7b";
  c.model_type = "qwen2";
  c.hidden_size = 3584;
  c.intermediate_size = 18944;
  c.num_layers = 28;
  c.num_heads = 28;
  c.num_kv_heads = 4;
  c.head_dim = 128;
  c.vocab_size = 152064;
  c.max_position_embeddings = 131072;
  c.attention_bias = true;
  return c;
}

// A small model whose embedding is smaller than a layer.
inline model::ModelConfig small_model() {
  model::ModelConfig c;
  c.name = "small";
  c.hidden_size = 256;
  c.intermediate_size = 1024;
  c.num_layers = 8;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.vocab_size = 512;
  return c;
}

inline constexpr uint64_t kGiB = uint64_t{1} << 30;

}  // namespace ringserve::offload::testing
