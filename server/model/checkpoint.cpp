#include "model/checkpoint.h"

#include <fstream>

#include "model/layout.h"
#include "model/safetensors_writer.h"

namespace ringserve::model {
namespace {

template <class T>
std::span<const std::byte> as_bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

struct Entry {
  TensorDecl decl;
  std::span<const std::byte> bytes;
};

void add_linear(std::vector<Entry>& out, const std::string& base, const QuantLinear& q) {
  out.push_back({{base + ".weight", DType::kI8, {q.rows, q.cols}}, as_bytes(q.q)});
  out.push_back({{base + ".weight_scale", DType::kF32, {q.rows}}, as_bytes(q.scale)});
  if (!q.bias.empty()) out.push_back({{base + ".bias", DType::kF32, {q.rows}}, as_bytes(q.bias)});
}

void add_vector(std::vector<Entry>& out, const std::string& name, const std::vector<float>& v) {
  out.push_back({{name, DType::kF32, {static_cast<int64_t>(v.size())}}, as_bytes(v)});
}

Status check_consistent(const ModelWeights& w) {
  const auto& c = w.config;
  RS_TRY_STATUS(c.validate());
  if (w.layers.size() != static_cast<size_t>(c.num_layers) ||
      w.embed_tokens.bf16.size() != static_cast<size_t>(c.vocab_size) * c.hidden_size ||
      w.lm_head.q.size() != static_cast<size_t>(c.vocab_size) * c.hidden_size)
    return make_error(Errc::kInvalidArgument, "weights do not match their config");
  const size_t hidden = static_cast<size_t>(c.hidden_size);
  if (w.final_norm.size() != hidden)
    return make_error(Errc::kInvalidArgument, "weights: final norm size");
  auto shapes = layer_linear_shapes(c);
  for (const auto& layer : w.layers) {
    if (layer.input_norm.size() != hidden || layer.post_attention_norm.size() != hidden)
      return make_error(Errc::kInvalidArgument,
                        "weights: layer norm size does not match the config");
    for (size_t i = 0; i < kLayerLinears.size(); ++i) {
      const QuantLinear& q = layer.*kLayerLinears[i].member;
      const size_t want_bias = kLayerLinears[i].has_bias ? static_cast<size_t>(q.rows) : 0;
      if (q.rows != shapes[i][0] || q.cols != shapes[i][1] ||
          q.q.size() != static_cast<size_t>(q.rows) * q.cols ||
          q.scale.size() != static_cast<size_t>(q.rows) || q.bias.size() != want_bias)
        return make_error(Errc::kInvalidArgument, "weights: {} does not match the config",
                          kLayerLinears[i].name);
    }
  }
  return {};
}

}  // namespace

bool is_ringserve_checkpoint(const TensorSource& source) {
  auto it = source.metadata().find("format");
  return it != source.metadata().end() && it->second == kRingserveFormat;
}

Status save_quantized_checkpoint(const ModelWeights& w, const std::filesystem::path& out_dir) {
  RS_TRY_STATUS(check_consistent(w));
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return make_error(Errc::kIoError, "{}: {}", out_dir.string(), ec.message());

  std::vector<Entry> entries;
  entries.push_back({{kEmbedName, DType::kBF16, {w.embed_tokens.rows, w.embed_tokens.cols}},
                     as_bytes(w.embed_tokens.bf16)});
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const auto& layer = w.layers[l];
    std::string p = layer_prefix(static_cast<int>(l));
    add_vector(entries, p + "input_layernorm.weight", layer.input_norm);
    for (const auto& slot : kLayerLinears) add_linear(entries, p + slot.name, layer.*slot.member);
    add_vector(entries, p + "post_attention_layernorm.weight", layer.post_attention_norm);
  }
  add_vector(entries, kFinalNormName, w.final_norm);
  add_linear(entries, "lm_head", w.lm_head);

  std::vector<TensorDecl> decls;
  for (const auto& e : entries) decls.push_back(e.decl);
  auto writer = RS_TRY(SafetensorsWriter::create(
      out_dir / "model.safetensors", std::move(decls),
      {{"format", kRingserveFormat}, {"version", kRingserveFormatVersion}}));
  for (const auto& e : entries) RS_TRY_STATUS(writer.write_tensor(e.decl.name, e.bytes));
  RS_TRY_STATUS(writer.finish());

  auto config_path = out_dir / "config.json";
  std::ofstream out(config_path, std::ios::binary | std::ios::trunc);
  out << to_config_json(w.config);
  out.close();
  if (!out) return make_error(Errc::kIoError, "{}: write failed", config_path.string());
  return {};
}

}  // namespace ringserve::model
