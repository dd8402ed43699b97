#include "workload.h"

#include <cmath>

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

}  // namespace ringbench
