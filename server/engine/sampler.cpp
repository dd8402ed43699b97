#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ringserve::engine {
namespace {

uint64_t splitmix64(uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// log(sum(exp(logits))) in double, NaN entries ignored.
double log_sum_exp(std::span<const float> logits, float max_logit) noexcept {
  double sum = 0.0;
  for (float l : logits) {
    if (!std::isnan(l)) sum += std::exp(static_cast<double>(l) - max_logit);
  }
  return static_cast<double>(max_logit) + std::log(sum);
}

// Higher logit first, lower id on ties; NaN sorts last.
struct ByLogit {
  std::span<const float> logits;
  bool operator()(int32_t a, int32_t b) const noexcept {
    const float la = logits[a], lb = logits[b];
    const bool na = std::isnan(la), nb = std::isnan(lb);
    if (na != nb) return nb;
    if (!na && la != lb) return la > lb;
    return a < b;
  }
};

}  // namespace

double uniform_variate(uint64_t seed, uint64_t step) noexcept {
  // Two rounds so nearby (seed, step) pairs give unrelated variates.
  const uint64_t bits = splitmix64(splitmix64(seed) ^ (step * 0xd1b54a32d192ed03ull));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

int32_t argmax(std::span<const float> values) noexcept {
  int32_t best = 0;
  float best_value = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (std::isnan(v)) continue;
    if (!found || v > best_value) {
      best = static_cast<int32_t>(i);
      best_value = v;
      found = true;
    }
  }
  return best;
}

SampleOutput Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                             uint64_t step) {
  SampleOutput out;
  const auto vocab = static_cast<int32_t>(logits.size());
  if (vocab == 0) return out;

  const int32_t best = argmax(logits);
  const float max_logit = logits[best];
  const double lse = std::isfinite(max_logit) ? log_sum_exp(logits, max_logit) : max_logit;
  auto logprob_of = [&](int32_t id) {
    return static_cast<float>(static_cast<double>(logits[id]) - lse);
  };

  if (params.temperature <= 0.0f || !std::isfinite(max_logit)) {
    out.token = best;
  } else {
    const double inv_t = 1.0 / params.temperature;
    order_.clear();
    const bool use_top_k = params.top_k > 0 && params.top_k < vocab;
    const bool use_top_p = params.top_p < 1.0f;
    if (use_top_p && !use_top_k) {
      // Tokens below this probability cannot be in the nucleus: all of them
      // together hold less than 1 - top_p of the mass. Skipping them keeps
      // the sort short on a 152k vocabulary.
      double sum = 0.0;
      for (float l : logits) {
        if (!std::isnan(l)) sum += std::exp((static_cast<double>(l) - max_logit) * inv_t);
      }
      const double floor = 0.5 * (1.0 - std::max(0.0f, params.top_p)) / vocab * sum;
      for (int32_t i = 0; i < vocab; ++i) {
        if (!std::isnan(logits[i]) && std::exp((logits[i] - max_logit) * inv_t) >= floor) {
          order_.push_back(i);
        }
      }
    } else {
      order_.resize(vocab);
      for (int32_t i = 0; i < vocab; ++i) order_[i] = i;
    }
    const ByLogit by_logit{logits};
    if (use_top_k) {
      std::partial_sort(order_.begin(), order_.begin() + params.top_k, order_.end(), by_logit);
      order_.resize(params.top_k);
    } else if (use_top_p) {
      std::sort(order_.begin(), order_.end(), by_logit);
    }

    probs_.resize(order_.size());
    double total = 0.0;
    for (size_t i = 0; i < order_.size(); ++i) {
      const float l = logits[order_[i]];
      const double p = std::isnan(l) ? 0.0 : std::exp((static_cast<double>(l) - max_logit) * inv_t);
      probs_[i] = static_cast<float>(p);
      total += p;
    }
    size_t kept = order_.size();
    if (use_top_p) {
      const double target = std::max(0.0, static_cast<double>(params.top_p)) * total;
      double mass = 0.0;
      kept = 0;
      while (kept < order_.size()) {
        mass += probs_[kept];
        ++kept;
        if (mass >= target) break;
      }
      total = mass;
    }

    const double u = uniform_variate(params.seed, step) * total;
    double cumulative = 0.0;
    out.token = order_[kept - 1];  // rounding can leave u just above the last sum
    for (size_t i = 0; i < kept; ++i) {
      cumulative += probs_[i];
      if (u < cumulative && probs_[i] > 0.0f) {
        out.token = order_[i];
        break;
      }
    }
  }
  out.logprob = logprob_of(out.token);

  const int n = std::min<int>(std::clamp(params.top_logprobs, 0, kMaxTopLogprobs), vocab);
  if (n > 0) {
    order_.resize(vocab);
    for (int32_t i = 0; i < vocab; ++i) order_[i] = i;
    std::partial_sort(order_.begin(), order_.begin() + n, order_.end(), ByLogit{logits});
    out.top.reserve(n);
    for (int i = 0; i < n; ++i) out.top.push_back({order_[i], logprob_of(order_[i])});
  }
  return out;
}

}  // namespace ringserve::engine
