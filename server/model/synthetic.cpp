#include "model/synthetic.h"

#include <charconv>
#include <cmath>

#include "model/layout.h"
#include "model/manifest.h"
#include "model/parallel.h"
#include "model/quantize.h"
#include "model/rng.h"

namespace ringserve::model {
namespace {

constexpr size_t kRowsPerChunk = 64;
// The standard deviation of q uniform over [-127, 127].
const float kUniformInt8Std = 127.0f / std::sqrt(3.0f);
// Embedding values ~ U(-a, a) with a standard deviation of 0.02, like a
// freshly initialized transformers model.
const float kEmbedHalfWidth = 0.02f * std::sqrt(3.0f);

Expected<uint64_t> parse_u64(std::string_view text, std::string_view key) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
    return make_error(Errc::kInvalidArgument, "synthetic spec: {}={} is not a non-negative integer",
                      key, text);
  return v;
}

// q uniform in [-127, 127]; scales keep a unit-variance input at unit
// variance on the output, with a per-row spread so scales are not all equal.
QuantLinear random_linear(int rows, int cols, bool bias, uint64_t seed, std::string_view name,
                          int threads) {
  QuantLinear q;
  q.rows = rows;
  q.cols = cols;
  q.q.resize(static_cast<size_t>(rows) * cols);
  q.scale.resize(static_cast<size_t>(rows));
  if (bias) q.bias.resize(static_cast<size_t>(rows));
  const uint64_t id = name_id(name);
  const float base_scale = 1.0f / (kUniformInt8Std * std::sqrt(static_cast<float>(cols)));
  parallel_for(static_cast<size_t>(rows), threads, kRowsPerChunk, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      RowRng rng(seed, id, r);
      int8_t* row = q.q.data() + r * static_cast<size_t>(cols);
      size_t c = 0;
      while (c < static_cast<size_t>(cols)) {
        uint64_t bits = rng.next();
        for (int b = 0; b < 8 && c < static_cast<size_t>(cols); ++b, ++c) {
          // A byte scaled onto the 255 values of [-127, 127].
          row[c] =
              static_cast<int8_t>(static_cast<int>((((bits >> (8 * b)) & 0xff) * 255) >> 8) - 127);
        }
      }
      q.scale[r] = base_scale * (1.0f + 0.25f * rng.uniform_pm1());
      if (bias) q.bias[r] = 0.05f * rng.uniform_pm1();
    }
  });
  return q;
}

}  // namespace

Expected<SyntheticSpec> parse_synthetic_spec(std::string_view spec) {
  size_t comma = spec.find(',');
  std::string_view name = spec.substr(0, comma);
  SyntheticSpec out;
  out.config = RS_TRY(builtin_manifest(name));
  out.config.name = std::string(name);
  std::string_view rest =
      comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
  while (!rest.empty()) {
    size_t next = rest.find(',');
    std::string_view item = rest.substr(0, next);
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return make_error(Errc::kInvalidArgument, "synthetic spec: \"{}\" is not key=value", item);
    std::string_view key = item.substr(0, eq);
    uint64_t value = RS_TRY(parse_u64(item.substr(eq + 1), key));
    if (key == "layers") {
      if (value == 0 || value > 4096)
        return make_error(Errc::kInvalidArgument, "synthetic spec: layers={} out of range", value);
      out.config.num_layers = static_cast<int>(value);
      out.config.name += ",layers=" + std::to_string(value);
    } else if (key == "seed") {
      out.seed = value;
    } else {
      return make_error(Errc::kInvalidArgument, "synthetic spec: unknown key \"{}\" (layers, seed)",
                        key);
    }
  }
  RS_TRY_STATUS(out.config.validate());
  return out;
}

Expected<ModelWeights> make_synthetic_weights(const ModelConfig& config, uint64_t seed,
                                              int threads) {
  RS_TRY_STATUS(config.validate());
  ModelWeights w;
  w.config = config;
  const int hidden = config.hidden_size;

  w.embed_tokens.rows = config.vocab_size;
  w.embed_tokens.cols = hidden;
  w.embed_tokens.bf16.resize(static_cast<size_t>(config.vocab_size) * hidden);
  const uint64_t embed_id = name_id(kEmbedName);
  parallel_for(static_cast<size_t>(config.vocab_size), threads, 256, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      RowRng rng(seed, embed_id, r);
      uint16_t* row = w.embed_tokens.bf16.data() + r * static_cast<size_t>(hidden);
      // Four 16-bit uniforms per draw: generation runs at memory speed.
      for (int c = 0; c < hidden; c += 4) {
        uint64_t bits = rng.next();
        for (int k = 0; k < 4 && c + k < hidden; ++k) {
          float u =
              (static_cast<float>((bits >> (16 * k)) & 0xffff) - 32768.0f) * (1.0f / 32768.0f);
          row[c + k] = float_to_bf16(kEmbedHalfWidth * u);
        }
      }
    }
  });

  auto shapes = layer_linear_shapes(config);
  w.layers.resize(static_cast<size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    LayerWeights& layer = w.layers[static_cast<size_t>(l)];
    std::string p = layer_prefix(l);
    layer.input_norm.assign(static_cast<size_t>(hidden), 1.0f);
    layer.post_attention_norm.assign(static_cast<size_t>(hidden), 1.0f);
    for (size_t i = 0; i < kLayerLinears.size(); ++i) {
      const auto& slot = kLayerLinears[i];
      layer.*slot.member =
          random_linear(shapes[i][0], shapes[i][1], slot.has_bias, seed, p + slot.name, threads);
    }
  }
  w.final_norm.assign(static_cast<size_t>(hidden), 1.0f);
  if (config.tie_word_embeddings) {
    // Same path as a real tied checkpoint: the head is the quantized embedding.
    w.lm_head.rows = config.vocab_size;
    w.lm_head.cols = hidden;
    w.lm_head.q.resize(w.embed_tokens.bf16.size());
    w.lm_head.scale.resize(static_cast<size_t>(config.vocab_size));
    RS_TRY_STATUS(quantize_matrix(
        DType::kBF16, reinterpret_cast<const std::byte*>(w.embed_tokens.bf16.data()),
        config.vocab_size, hidden, w.lm_head.q, w.lm_head.scale, threads));
  } else {
    w.lm_head = random_linear(config.vocab_size, hidden, false, seed, "lm_head", threads);
  }
  return w;
}

}  // namespace ringserve::model
