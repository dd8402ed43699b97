#include "workload.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace ringbench {
namespace {

// Uniform in [0, 1) from the top 53 bits: portable, unlike std::*_distribution.
double unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

std::vector<std::vector<int32_t>> make_prompts(int count, int length, int32_t low, int32_t high,
                                               uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t span = static_cast<uint64_t>(high - low);
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(count));
  for (auto& p : prompts) {
    p.resize(static_cast<size_t>(length));
    for (auto& id : p) id = low + static_cast<int32_t>(rng() % span);
  }
  return prompts;
}

std::vector<double> poisson_arrivals(int count, double rate, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<double> at(static_cast<size_t>(count));
  double t = 0;
  for (size_t i = 0; i < at.size(); ++i) {
    at[i] = t;
    t += -std::log1p(-unit(rng)) / rate;
  }
  return at;
}

IdRange token_id_range(int64_t vocab) {
  const int64_t v = std::clamp<int64_t>(vocab, 0, std::numeric_limits<int32_t>::max());
  IdRange r;
  r.low = v > 4096 ? 1000 : 3;
  r.high = static_cast<int32_t>(v > 4096 ? std::min<int64_t>(v, 150000) : v);
  return r;
}

std::optional<ModelFacts> parse_models(const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto data = j.find("data");
  if (data == j.end() || !data->is_array() || data->empty() || !(*data)[0].is_object()) {
    return std::nullopt;
  }
  const nlohmann::json& m = (*data)[0];
  auto id = m.find("id");
  if (id == m.end() || !id->is_string() || id->get<std::string>().empty()) return std::nullopt;
  ModelFacts facts;
  facts.id = id->get<std::string>();
  auto positive = [](const nlohmann::json& obj, const char* key) -> std::optional<int64_t> {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_number_integer() || it->get<int64_t>() <= 0) return {};
    return it->get<int64_t>();
  };
  facts.vocab_size = positive(m, "vocab_size");
  facts.max_context = positive(m, "max_model_len");
  if (auto meta = m.find("meta"); meta != m.end() && meta->is_object()) {
    if (!facts.vocab_size) facts.vocab_size = positive(*meta, "n_vocab");
  }
  return facts;
}

std::string completion_request_body(const std::vector<int32_t>& prompt, const Config& config,
                                    uint64_t seed, const std::string& model) {
  nlohmann::json body = {{"prompt", prompt},
                         {"max_tokens", config.output_len},
                         {"temperature", config.temperature},
                         {"ignore_eos", true},
                         {"stream", true},
                         {"return_token_ids", true}};
  if (config.temperature > 0.0f) {
    if (config.top_p < 1.0f) body["top_p"] = config.top_p;
    if (config.top_k > 0) body["top_k"] = config.top_k;
    body["seed"] = seed;
  }
  if (!model.empty()) {
    body["model"] = model;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body.dump();
}

}  // namespace ringbench
