// The requests ringbench sends: token-id prompts of exactly the asked
// length (so no tokenizer is involved and lengths are exact), the times at
// which an open-loop run sends them, and the OpenAI-compatible request body
// and model facts used over HTTP.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "config.h"

namespace ringbench {

// `count` prompts of `length` ids drawn uniformly from [low, high), seeded:
// the same seed gives the same prompts on every machine (std::mt19937_64 is
// specified by the standard; the distribution is done by hand for that).
std::vector<std::vector<int32_t>> make_prompts(int count, int length, int32_t low, int32_t high,
                                               uint64_t seed);

// Send offsets in seconds for a Poisson process of `rate` per second:
// exponential gaps, first request at 0.
std::vector<double> poisson_arrivals(int count, double rate, uint64_t seed);

// The ids prompts are drawn from, [low, high): plain ids of a vocabulary of
// `vocab`, skipping the lowest ones (bos/eos/pad in small vocabularies) and
// the added special tokens at the top of large ones. Empty when too small.
struct IdRange {
  int32_t low = 0;
  int32_t high = 0;
  bool empty() const { return high <= low; }
};
IdRange token_id_range(int64_t vocab);

// Assumed when neither --vocab nor the server says: the base vocabulary of
// Llama-2/Mistral-style models, and a safe range for larger ones.
inline constexpr int64_t kDefaultVocab = 32000;

// What GET /v1/models says about the (first) served model. Servers differ:
// ringserve and vLLM give "max_model_len", llama.cpp gives "meta":
// {"n_vocab", "n_ctx_train"}; a "vocab_size" field is read where present.
struct ModelFacts {
  std::string id;
  std::optional<int64_t> vocab_size;
  std::optional<int64_t> max_context;
};
// nullopt when the body is not a model list with at least one id.
std::optional<ModelFacts> parse_models(const std::string& body);

// The streaming POST /v1/completions body: token-id prompt, exactly
// config.output_len tokens (ignore_eos), the config's sampling with `seed`,
// token ids and usage asked for. `model` is sent when not empty (ringserve
// serves one model and needs none).
std::string completion_request_body(const std::vector<int32_t>& prompt, const Config& config,
                                    uint64_t seed, const std::string& model);

}  // namespace ringbench
