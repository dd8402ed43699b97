#include "model/config.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ringserve::model {
namespace {

using nlohmann::json;

constexpr int64_t kMaxDim = int64_t{1} << 24;  // far above any real model, far below overflow

Expected<int> get_int(const json& j, const char* key, std::string_view source, bool required,
                      int fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return make_error(Errc::kCorruptData, "{}: missing field \"{}\"", source, key);
    return fallback;
  }
  if (!it->is_number_integer())
    return make_error(Errc::kCorruptData, "{}: field \"{}\" must be an integer", source, key);
  int64_t v = it->get<int64_t>();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    return make_error(Errc::kCorruptData, "{}: field \"{}\" = {} out of range", source, key, v);
  return static_cast<int>(v);
}

Expected<double> get_double(const json& j, const char* key, std::string_view source,
                            double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number())
    return make_error(Errc::kCorruptData, "{}: field \"{}\" must be a number", source, key);
  return it->get<double>();
}

Expected<bool> get_bool(const json& j, const char* key, std::string_view source, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    return make_error(Errc::kCorruptData, "{}: field \"{}\" must be a boolean", source, key);
  return it->get<bool>();
}

// eos_token_id is an int in most configs and a list in some (Llama 3, newer
// Qwen generation configs).
Expected<std::vector<int32_t>> get_id_list(const json& value, const char* key,
                                           std::string_view source) {
  std::vector<int32_t> ids;
  auto one = [&](const json& v) -> Status {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
        v.get<int64_t>() > std::numeric_limits<int32_t>::max())
      return make_error(Errc::kCorruptData, "{}: field \"{}\" must hold non-negative token ids",
                        source, key);
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
    return {};
  };
  if (value.is_array()) {
    for (const auto& v : value) RS_TRY_STATUS(one(v));
  } else {
    RS_TRY_STATUS(one(value));
  }
  return ids;
}

Expected<json> parse_object(std::string_view text, std::string_view source) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(Errc::kCorruptData, "{}: not valid JSON", source);
  if (!j.is_object())
    return make_error(Errc::kCorruptData, "{}: top level must be a JSON object", source);
  return j;
}

Status apply_token_ids(const json& j, std::string_view source, ModelConfig& config) {
  if (auto it = j.find("bos_token_id"); it != j.end() && !it->is_null()) {
    auto ids = RS_TRY(get_id_list(*it, "bos_token_id", source));
    if (ids.size() != 1)
      return make_error(Errc::kCorruptData, "{}: bos_token_id must be one id", source);
    config.bos_token_id = ids[0];
  }
  if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    config.eos_token_ids = RS_TRY(get_id_list(*it, "eos_token_id", source));
  }
  return {};
}

Expected<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::kNotFound, "{}: cannot open", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return make_error(Errc::kIoError, "{}: read failed", path.string());
  return ss.str();
}

}  // namespace

Status ModelConfig::validate() const {
  auto positive = [&](const char* what, int64_t v) -> Status {
    if (v <= 0 || v > kMaxDim)
      return make_error(Errc::kInvalidArgument, "config: {} = {} out of range", what, v);
    return {};
  };
  RS_TRY_STATUS(positive("hidden_size", hidden_size));
  RS_TRY_STATUS(positive("intermediate_size", intermediate_size));
  RS_TRY_STATUS(positive("num_hidden_layers", num_layers));
  RS_TRY_STATUS(positive("num_attention_heads", num_heads));
  RS_TRY_STATUS(positive("num_key_value_heads", num_kv_heads));
  RS_TRY_STATUS(positive("head_dim", head_dim));
  RS_TRY_STATUS(positive("vocab_size", vocab_size));
  RS_TRY_STATUS(positive("max_position_embeddings", max_position_embeddings));
  if (num_layers > 4096)
    return make_error(Errc::kInvalidArgument, "config: {} layers is not plausible", num_layers);
  if (num_heads % num_kv_heads != 0)
    return make_error(Errc::kInvalidArgument,
                      "config: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                      num_heads, num_kv_heads);
  if (head_dim % 2 != 0)
    return make_error(Errc::kInvalidArgument, "config: head_dim {} must be even for RoPE",
                      head_dim);
  if (static_cast<int64_t>(num_heads) * head_dim > kMaxDim)
    return make_error(Errc::kInvalidArgument, "config: q dimension out of range");
  if (!(rope_theta > 0.0) || !std::isfinite(rope_theta))
    return make_error(Errc::kInvalidArgument, "config: rope_theta {} must be positive", rope_theta);
  if (!(rms_norm_eps > 0.0) || !std::isfinite(rms_norm_eps))
    return make_error(Errc::kInvalidArgument, "config: rms_norm_eps {} must be positive",
                      rms_norm_eps);
  if (bos_token_id >= vocab_size)
    return make_error(Errc::kInvalidArgument, "config: bos_token_id {} outside vocabulary of {}",
                      bos_token_id, vocab_size);
  for (int32_t id : eos_token_ids) {
    if (id < 0 || id >= vocab_size)
      return make_error(Errc::kInvalidArgument, "config: eos_token_id {} outside vocabulary of {}",
                        id, vocab_size);
  }
  if (use_sliding_window)
    return make_error(Errc::kUnsupported, "config: use_sliding_window = true is not supported");
  return {};
}

Expected<ModelConfig> parse_config_json(std::string_view json_text, std::string_view source) {
  json j = RS_TRY(parse_object(json_text, source));
  ModelConfig c;
  if (auto it = j.find("model_type"); it != j.end()) {
    if (!it->is_string())
      return make_error(Errc::kCorruptData, "{}: model_type must be a string", source);
    c.model_type = it->get<std::string>();
  } else {
    return make_error(Errc::kCorruptData, "{}: missing field \"model_type\"", source);
  }
  if (c.model_type != "qwen2")
    return make_error(Errc::kUnsupported, "{}: model_type \"{}\" is not supported (only qwen2)",
                      source, c.model_type);
  c.hidden_size = RS_TRY(get_int(j, "hidden_size", source, true, 0));
  c.intermediate_size = RS_TRY(get_int(j, "intermediate_size", source, true, 0));
  c.num_layers = RS_TRY(get_int(j, "num_hidden_layers", source, true, 0));
  c.num_heads = RS_TRY(get_int(j, "num_attention_heads", source, true, 0));
  c.num_kv_heads = RS_TRY(get_int(j, "num_key_value_heads", source, false, c.num_heads));
  c.vocab_size = RS_TRY(get_int(j, "vocab_size", source, true, 0));
  c.max_position_embeddings = RS_TRY(get_int(j, "max_position_embeddings", source, false, 32768));
  if (c.num_heads <= 0)
    return make_error(Errc::kCorruptData, "{}: num_attention_heads = {} must be positive", source,
                      c.num_heads);
  c.head_dim = RS_TRY(get_int(j, "head_dim", source, false, c.hidden_size / c.num_heads));
  if (!j.contains("head_dim") && c.hidden_size % c.num_heads != 0)
    return make_error(Errc::kCorruptData,
                      "{}: hidden_size {} is not a multiple of num_attention_heads {}", source,
                      c.hidden_size, c.num_heads);

  // transformers >= 4.5x moved rope settings under rope_parameters (the
  // fixtures use it); older configs (the 7B's) have a top-level rope_theta.
  c.rope_theta = RS_TRY(get_double(j, "rope_theta", source, 10000.0));
  if (auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    if (!it->is_object())
      return make_error(Errc::kCorruptData, "{}: rope_parameters must be an object", source);
    c.rope_theta = RS_TRY(get_double(*it, "rope_theta", source, c.rope_theta));
    if (auto t = it->find("rope_type");
        t != it->end() && !(t->is_string() && t->get<std::string>() == "default"))
      return make_error(Errc::kUnsupported, "{}: rope_parameters.rope_type {} is not supported",
                        source, t->dump());
  }
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null())
    return make_error(Errc::kUnsupported, "{}: rope_scaling is not supported", source);
  c.rms_norm_eps = RS_TRY(get_double(j, "rms_norm_eps", source, 1e-6));
  c.tie_word_embeddings = RS_TRY(get_bool(j, "tie_word_embeddings", source, false));
  c.use_sliding_window = RS_TRY(get_bool(j, "use_sliding_window", source, false));
  if (auto it = j.find("hidden_act");
      it != j.end() && !(it->is_string() && it->get<std::string>() == "silu"))
    return make_error(Errc::kUnsupported, "{}: hidden_act {} is not supported (only silu)", source,
                      it->dump());
  RS_TRY_STATUS(apply_token_ids(j, source, c));
  if (auto it = j.find("_name_or_path"); it != j.end() && it->is_string())
    c.name = it->get<std::string>();

  if (auto st = c.validate(); !st) return with_context(std::move(st).error(), source);
  return c;
}

Status apply_generation_config(std::string_view json_text, std::string_view source,
                               ModelConfig& config) {
  json j = RS_TRY(parse_object(json_text, source));
  RS_TRY_STATUS(apply_token_ids(j, source, config));
  if (auto st = config.validate(); !st) return with_context(std::move(st).error(), source);
  return {};
}

Expected<ModelConfig> load_config(const std::filesystem::path& model_dir) {
  auto config_path = model_dir / "config.json";
  std::string text = RS_TRY(read_text(config_path));
  ModelConfig c = RS_TRY(parse_config_json(text, config_path.string()));
  if (c.name.empty())
    c.name = model_dir.filename().empty() ? model_dir.parent_path().filename().string()
                                          : model_dir.filename().string();
  auto gen_path = model_dir / "generation_config.json";
  std::error_code ec;
  if (std::filesystem::exists(gen_path, ec)) {
    std::string gen = RS_TRY(read_text(gen_path));
    RS_TRY_STATUS(apply_generation_config(gen, gen_path.string(), c));
  }
  return c;
}

std::string to_config_json(const ModelConfig& c) {
  json j;
  j["architectures"] = json::array({"Qwen2ForCausalLM"});
  j["model_type"] = c.model_type.empty() ? "qwen2" : c.model_type;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rope_theta"] = c.rope_theta;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["use_sliding_window"] = c.use_sliding_window;
  j["hidden_act"] = "silu";
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_ids.size() == 1) {
    j["eos_token_id"] = c.eos_token_ids[0];
  } else if (!c.eos_token_ids.empty()) {
    j["eos_token_id"] = c.eos_token_ids;
  }
  if (!c.name.empty()) j["_name_or_path"] = c.name;
  return j.dump(2) + "\n";
}

}  // namespace ringserve::model
