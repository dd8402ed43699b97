#include "model/loader.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "model/checkpoint.h"
#include "model/layout.h"
#include "model/parallel.h"
#include "model/quantize.h"
#include "model/synthetic.h"
#include "util/log.h"

namespace ringserve::model {

Expected<TensorView> expect_tensor(const TensorSource& source, const std::string& name,
                                   std::vector<int64_t> shape, bool quantized_int8) {
  TensorView v = RS_TRY(source.get(name));
  if (!std::equal(v.shape.begin(), v.shape.end(), shape.begin(), shape.end()))
    return make_error(Errc::kCorruptData, "{}: shape {} but the config needs {}", v.where(),
                      shape_string(v.shape), shape_string(shape));
  if (quantized_int8 ? v.dtype != DType::kI8 : !is_float_source(v.dtype))
    return make_error(Errc::kCorruptData, "{}: dtype {} where {} is needed", v.where(),
                      dtype_name(v.dtype), quantized_int8 ? "I8" : "BF16, F16 or F32");
  return v;
}

std::vector<float> to_floats(const TensorView& v) {
  std::vector<float> out(v.numel());
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_float(v.dtype, v.bytes.data(), i);
  return out;
}

Expected<std::vector<float>> load_vector(const TensorSource& source, const std::string& name,
                                         int size) {
  TensorView v = RS_TRY(expect_tensor(source, name, {size}));
  return to_floats(v);
}

namespace {

// Rows per parallel chunk for plain copies and conversions.
constexpr size_t kCopyChunkRows = 256;

// Embeddings stay bf16; f16/f32 sources are rounded once, here.
Embedding load_embedding(const TensorView& v, int threads) {
  Embedding e;
  e.rows = static_cast<int>(v.shape[0]);
  e.cols = static_cast<int>(v.shape[1]);
  e.bf16.resize(v.numel());
  const size_t cols = static_cast<size_t>(e.cols);
  parallel_for(static_cast<size_t>(e.rows), threads, kCopyChunkRows, [&](size_t begin, size_t end) {
    if (v.dtype == DType::kBF16) {
      std::memcpy(e.bf16.data() + begin * cols, v.bytes.data() + begin * cols * 2,
                  (end - begin) * cols * 2);
      return;
    }
    for (size_t i = begin * cols; i < end * cols; ++i)
      e.bf16[i] = float_to_bf16(load_float(v.dtype, v.bytes.data(), i));
  });
  return e;
}

Expected<QuantLinear> load_float_linear(const TensorSource& source, const std::string& base,
                                        int rows, int cols, bool has_bias, int threads) {
  TensorView w = RS_TRY(expect_tensor(source, base + ".weight", {rows, cols}));
  QuantLinear q = RS_TRY(quantize_linear(w, threads));
  if (has_bias) q.bias = RS_TRY(load_vector(source, base + ".bias", rows));
  return q;
}

Expected<QuantLinear> load_int8_linear(const TensorSource& source, const std::string& base,
                                       int rows, int cols, bool has_bias, int threads) {
  TensorView w =
      RS_TRY(expect_tensor(source, base + ".weight", {rows, cols}, /*quantized_int8=*/true));
  TensorView s = RS_TRY(expect_tensor(source, base + ".weight_scale", {rows}));
  QuantLinear q;
  q.rows = rows;
  q.cols = cols;
  q.q.resize(w.numel());
  q.scale = to_floats(s);
  for (int r = 0; r < rows; ++r) {
    if (!std::isfinite(q.scale[r]) || q.scale[r] < 0.0f)
      return make_error(Errc::kCorruptData, "{}: scale of row {} is {}", s.where(), r, q.scale[r]);
  }
  const size_t c = static_cast<size_t>(cols);
  parallel_for(static_cast<size_t>(rows), threads, kCopyChunkRows, [&](size_t begin, size_t end) {
    std::memcpy(q.q.data() + begin * c, w.bytes.data() + begin * c, (end - begin) * c);
  });
  if (has_bias) q.bias = RS_TRY(load_vector(source, base + ".bias", rows));
  return q;
}

Status check_unknown_tensors(const ModelConfig& config, const TensorSource& source,
                             bool quantized) {
  std::vector<std::string> known;
  for (const auto& t : hf_tensor_layout(config)) {
    known.push_back(t.name);
    if (quantized && t.shape.size() == 2 && t.name != kEmbedName)
      known.push_back(t.name + "_scale");
  }
  if (config.tie_word_embeddings)
    known.push_back(kLmHeadName), known.push_back(std::string(kLmHeadName) + "_scale");
  std::sort(known.begin(), known.end());
  auto logger = log::get("model");
  for (const auto& v : source.tensors()) {
    if (!std::binary_search(known.begin(), known.end(), std::string(v.name)))
      logger->debug("{}: not part of a {}-layer qwen2 model, ignored", v.where(),
                    config.num_layers);
  }
  return {};
}

}  // namespace

std::vector<ExpectedTensor> hf_tensor_layout(const ModelConfig& c) {
  std::vector<ExpectedTensor> out;
  out.push_back({kEmbedName, {c.vocab_size, c.hidden_size}});
  auto shapes = layer_linear_shapes(c);
  for (int l = 0; l < c.num_layers; ++l) {
    std::string p = layer_prefix(l);
    out.push_back({p + "input_layernorm.weight", {c.hidden_size}});
    for (size_t i = 0; i < kLayerLinears.size(); ++i) {
      out.push_back({p + kLayerLinears[i].name + ".weight", {shapes[i][0], shapes[i][1]}});
      if (kLayerLinears[i].has_bias)
        out.push_back({p + kLayerLinears[i].name + ".bias", {shapes[i][0]}});
    }
    out.push_back({p + "post_attention_layernorm.weight", {c.hidden_size}});
  }
  out.push_back({kFinalNormName, {c.hidden_size}});
  if (!c.tie_word_embeddings) out.push_back({kLmHeadName, {c.vocab_size, c.hidden_size}});
  return out;
}

Expected<ModelWeights> load_from_source(const ModelConfig& config, const TensorSource& source,
                                        const LoadOptions& options) {
  RS_TRY_STATUS(config.validate());
  const bool quantized = is_ringserve_checkpoint(source);
  const int threads = options.threads;
  ModelWeights w;
  w.config = config;

  TensorView embed =
      RS_TRY(expect_tensor(source, kEmbedName, {config.vocab_size, config.hidden_size}));
  w.embed_tokens = load_embedding(embed, threads);

  auto shapes = layer_linear_shapes(config);
  w.layers.resize(static_cast<size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    LayerWeights& layer = w.layers[static_cast<size_t>(l)];
    std::string p = layer_prefix(l);
    layer.input_norm =
        RS_TRY(load_vector(source, p + "input_layernorm.weight", config.hidden_size));
    layer.post_attention_norm =
        RS_TRY(load_vector(source, p + "post_attention_layernorm.weight", config.hidden_size));
    for (size_t i = 0; i < kLayerLinears.size(); ++i) {
      const auto& slot = kLayerLinears[i];
      std::string base = p + slot.name;
      layer.*slot.member = quantized
                               ? RS_TRY(load_int8_linear(source, base, shapes[i][0], shapes[i][1],
                                                         slot.has_bias, threads))
                               : RS_TRY(load_float_linear(source, base, shapes[i][0], shapes[i][1],
                                                          slot.has_bias, threads));
    }
  }
  w.final_norm = RS_TRY(load_vector(source, kFinalNormName, config.hidden_size));

  const bool have_head = source.find(kLmHeadName) != nullptr;
  if (quantized && have_head) {
    w.lm_head = RS_TRY(
        load_int8_linear(source, "lm_head", config.vocab_size, config.hidden_size, false, threads));
  } else if (!config.tie_word_embeddings) {
    w.lm_head = RS_TRY(load_float_linear(source, "lm_head", config.vocab_size, config.hidden_size,
                                         false, threads));
  } else {
    // Tied: the head is the embedding matrix, quantized like any linear layer.
    w.lm_head = RS_TRY(quantize_linear(embed, threads));
  }
  RS_TRY_STATUS(check_unknown_tensors(config, source, quantized));
  return w;
}

Expected<ModelWeights> load_model(const std::string& spec, const LoadOptions& options) {
  auto logger = log::get("model");
  auto start = std::chrono::steady_clock::now();
  LoadStats stats;
  ModelWeights weights;
  if (spec.starts_with(kSyntheticPrefix)) {
    SyntheticSpec s =
        RS_TRY(parse_synthetic_spec(std::string_view(spec).substr(kSyntheticPrefix.size())));
    weights =
        RS_TRY(make_synthetic_weights(s.config, s.seed.value_or(options.seed), options.threads));
    stats.format = "synthetic";
  } else {
    std::filesystem::path dir(spec);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      return make_error(Errc::kNotFound, "{}: not a model directory (nor synthetic:<name>)", spec);
    ModelConfig config = RS_TRY(load_config(dir));
    TensorSource source = RS_TRY(TensorSource::open_dir(dir));
    source.advise_sequential();
    auto loaded = load_from_source(config, source, options);
    if (!loaded) return with_context(std::move(loaded).error(), dir.string());
    weights = std::move(loaded).value();
    stats.source_bytes = source.total_bytes();
    const TensorView* embed = source.find(kEmbedName);
    stats.format = is_ringserve_checkpoint(source) ? std::string(kRingserveFormat)
                                                   : "hf-" + std::string(dtype_name(embed->dtype));
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  logger->info(
      "loaded {} ({}, {} layers, {:.2f} GB int8 linear) from {} in {:.2f} s: {:.2f} GB read at "
      "{:.2f} GB/s",
      weights.config.name, stats.format, weights.config.num_layers, weights.linear_bytes() / 1e9,
      spec, stats.seconds, stats.source_bytes / 1e9, stats.gb_per_s());
  if (options.stats != nullptr) *options.stats = stats;
  return weights;
}

}  // namespace ringserve::model
