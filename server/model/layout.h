// Names of the tensors of one Qwen2 decoder layer, shared by the loader, the
// checkpoint writer and the synthetic generators so the three never drift.
#pragma once

#include <array>
#include <string>

#include "model/weights.h"

namespace ringserve::model {

inline std::string layer_prefix(int layer) {
  return "model.layers." + std::to_string(layer) + ".";
}

struct LinearSlot {
  const char* name;  // relative to the layer prefix, without ".weight"
  QuantLinear LayerWeights::*member;
  bool has_bias;
};

inline constexpr std::array<LinearSlot, 7> kLayerLinears{{
    {"self_attn.q_proj", &LayerWeights::q_proj, true},
    {"self_attn.k_proj", &LayerWeights::k_proj, true},
    {"self_attn.v_proj", &LayerWeights::v_proj, true},
    {"self_attn.o_proj", &LayerWeights::o_proj, false},
    {"mlp.gate_proj", &LayerWeights::gate_proj, false},
    {"mlp.up_proj", &LayerWeights::up_proj, false},
    {"mlp.down_proj", &LayerWeights::down_proj, false},
}};

// [rows, cols] of each slot of kLayerLinears for a config.
inline std::array<std::array<int, 2>, 7> layer_linear_shapes(const ModelConfig& c) {
  return {{{c.q_dim(), c.hidden_size},
           {c.kv_dim(), c.hidden_size},
           {c.kv_dim(), c.hidden_size},
           {c.hidden_size, c.q_dim()},
           {c.intermediate_size, c.hidden_size},
           {c.intermediate_size, c.hidden_size},
           {c.hidden_size, c.intermediate_size}}};
}

inline constexpr const char* kEmbedName = "model.embed_tokens.weight";
inline constexpr const char* kFinalNormName = "model.norm.weight";
inline constexpr const char* kLmHeadName = "lm_head.weight";

}  // namespace ringserve::model
