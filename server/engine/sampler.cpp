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
    auto weight = [&](int32_t id) {
      const float l = logits[id];
      return std::isnan(l) ? 0.0 : std::exp((static_cast<double>(l) - max_logit) * inv_t);
    };
    const ByLogit by_logit{logits};
    order_.resize(vocab);
    for (int32_t i = 0; i < vocab; ++i) order_[i] = i;
    size_t sorted = 0;  // order_[0, sorted) holds the best tokens, best first
    if (params.top_k > 0 && params.top_k < vocab) {
      std::partial_sort(order_.begin(), order_.begin() + params.top_k, order_.end(), by_logit);
      order_.resize(params.top_k);
      sorted = order_.size();
    }
    double total = 0.0;
    for (int32_t id : order_) total += weight(id);
    size_t kept = order_.size();
    if (params.top_p < 1.0f) {
      // Sort only as long a prefix as the nucleus needs, growing it 8x at a
      // time: real logits are peaked, so a 152k vocabulary rarely needs
      // more than the first few hundred.
      const double target = std::max(0.0, static_cast<double>(params.top_p)) * total;
      double mass = 0.0;
      kept = 0;
      for (size_t k = std::min<size_t>(order_.size(), 64);; k = std::min(order_.size(), k * 8)) {
        if (k > sorted) {
          std::partial_sort(order_.begin() + sorted, order_.begin() + k, order_.end(), by_logit);
          sorted = k;
        }
        while (kept < k && (kept == 0 || mass < target)) mass += weight(order_[kept++]);
        if (mass >= target || k == order_.size()) break;
      }
      total = mass;
    }

    const double u = uniform_variate(params.seed, step) * total;
    double cumulative = 0.0;
    out.token = best;  // only if rounding leaves u above the last partial sum
    for (size_t i = 0; i < kept; ++i) {
      const double w = weight(order_[i]);
      cumulative += w;
      if (u < cumulative && w > 0.0) {
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
