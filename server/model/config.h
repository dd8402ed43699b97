// The shape facts of a Qwen2-family model, read from a Hugging Face
// config.json (and generation_config.json when present) or from a manifest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::model {

struct ModelConfig {
  std::string name;        // for logs and HelloAck, e.g. "deepseek-r1-distill-qwen-7b"
  std::string model_type;  // "qwen2"
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // hidden_size / num_heads unless the config says otherwise
  int vocab_size = 0;
  int max_position_embeddings = 0;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = true;  // Qwen2: q/k/v carry biases, o does not
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;
  // Qwen2 configs carry sliding_window, but with use_sliding_window false it
  // is inert; we keep the value only to refuse configs that enable it.
  bool use_sliding_window = false;

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }

  // Checks the invariants the engines rely on (positive sizes, heads divide,
  // GQA group integral, ids inside the vocabulary).
  Status validate() const;
};

// Parses config.json text; `source` names the file in error messages.
Expected<ModelConfig> parse_config_json(std::string_view json_text, std::string_view source);

// Reads DIR/config.json and, when present, DIR/generation_config.json (whose
// eos/bos ids take precedence, as in transformers' generate()).
Expected<ModelConfig> load_config(const std::filesystem::path& model_dir);

// Applies generation_config.json text (bos/eos ids) over `config`; `source`
// names the file in error messages.
Status apply_generation_config(std::string_view json_text, std::string_view source,
                               ModelConfig& config);

// Serializes back to a Hugging Face style config.json (used by `convert`).
std::string to_config_json(const ModelConfig& config);

}  // namespace ringserve::model
