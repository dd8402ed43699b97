// Token sampling from one row of logits: the reference semantics every
// backend matches (the CUDA sampler is tested against this one).
//
//   temperature <= 0   greedy: argmax, the lowest id on ties
//   top_k > 0          keep the k most likely tokens (ties: lower id first)
//   top_p < 1          keep the smallest most-likely-first prefix whose mass
//                      reaches top_p (at least one token)
//   then draw from the renormalized distribution with a uniform variate
//   that depends only on (seed, step): a sequence's tokens do not depend on
//   which other sequences share its batch.
//
// Reported log-probabilities (the sampled token's and the top-n list) are
// the log-softmax of the raw logits, i.e. the model's own distribution,
// independent of temperature and truncation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/engine.h"

namespace ringserve::engine {

inline constexpr int kMaxTopLogprobs = 20;

// A counter-based generator: uniform double in [0, 1) from (seed, step).
double uniform_variate(uint64_t seed, uint64_t step) noexcept;

struct SampleOutput {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;  // best first, min(top_logprobs, vocab) entries
};

// Reusable scratch space so a step samples without allocating per token.
class Sampler {
 public:
  // `step` is the index of the token in its sequence's output (0 = first).
  SampleOutput sample(std::span<const float> logits, const SamplingParams& params, uint64_t step);

 private:
  std::vector<int32_t> order_;
};

// Index of the largest value, lowest index on ties; NaN never wins.
int32_t argmax(std::span<const float> values) noexcept;

}  // namespace ringserve::engine
