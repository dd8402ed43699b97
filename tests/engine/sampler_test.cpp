#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "engine/sampler.h"
#include "support/test_support.h"

namespace ringserve::engine {
namespace {

std::vector<float> random_logits(std::mt19937_64& rng, int vocab, float spread = 3.0f) {
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> logits(vocab);
  for (auto& l : logits) l = dist(rng);
  return logits;
}

// Ids in order of decreasing logit, lower id first on ties.
std::vector<int32_t> ranking(const std::vector<float>& logits) {
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  return ids;
}

TEST(Sampler, ArgmaxPicksLowestIdOnTiesAndSkipsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(argmax(std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(argmax(std::vector<float>{nan, 0.5f, nan, 0.7f}), 3);
  EXPECT_EQ(argmax(std::vector<float>{-INFINITY, -INFINITY}), 0);
}

TEST(Sampler, TemperatureZeroIsGreedy) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  Sampler sampler;
  for (int trial = 0; trial < 50; ++trial) {
    const auto logits = random_logits(rng, 257);
    SamplingParams p;
    p.temperature = 0.0f;
    p.top_k = 5;
    p.top_p = 0.3f;
    p.seed = trial;
    EXPECT_EQ(sampler.sample(logits, p, trial).token, argmax(logits));
    p.temperature = -1.0f;
    EXPECT_EQ(sampler.sample(logits, p, trial).token, argmax(logits));
  }
}

TEST(Sampler, TopKNeverEmitsExcludedTokens) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  Sampler sampler;
  for (int k : {1, 2, 7, 50}) {
    const auto logits = random_logits(rng, 300, 1.0f);
    const auto order = ranking(logits);
    const std::set<int32_t> allowed(order.begin(), order.begin() + k);
    std::set<int32_t> seen;
    SamplingParams p;
    p.temperature = 5.0f;  // flat: every allowed token is likely to show up
    p.top_k = k;
    for (uint64_t step = 0; step < 3000; ++step) {
      p.seed = step;
      const int32_t t = sampler.sample(logits, p, step).token;
      ASSERT_TRUE(allowed.count(t)) << "top_k " << k << " emitted " << t;
      seen.insert(t);
    }
    EXPECT_EQ(seen.size(), allowed.size()) << "top_k " << k;
  }
}

TEST(Sampler, TopPNeverEmitsTokensOutsideTheNucleus) {
  // Probabilities 0.5, 0.25, 0.125, 0.0625, ...: with top_p 0.8 the nucleus
  // is the first three (0.875 >= 0.8; two reach only 0.75).
  std::vector<float> logits(12);
  for (int i = 0; i < 12; ++i) logits[i] = -static_cast<float>(i) * std::log(2.0f);
  std::swap(logits[0], logits[7]);  // the order must not depend on ids
  Sampler sampler;
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.8f;
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int step = 0; step < n; ++step) {
    p.seed = 99;
    counts[sampler.sample(logits, p, step).token]++;
  }
  EXPECT_EQ(counts.size(), 3u);
  for (const auto& [id, count] : counts) EXPECT_TRUE(id == 7 || id == 1 || id == 2) << id;
  // Renormalized over the nucleus: 4/7, 2/7, 1/7.
  EXPECT_NEAR(counts[7] / double(n), 4.0 / 7, 0.02);
  EXPECT_NEAR(counts[1] / double(n), 2.0 / 7, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 1.0 / 7, 0.02);
}

TEST(Sampler, TopPKeepsAtLeastOneToken) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  Sampler sampler;
  const auto logits = random_logits(rng, 1000);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.0f;
  for (uint64_t step = 0; step < 100; ++step) {
    EXPECT_EQ(sampler.sample(logits, p, step).token, argmax(logits));
  }
}

TEST(Sampler, TopPCombinedWithTopKOnLargeVocabulary) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  Sampler sampler;
  const auto logits = random_logits(rng, 152064, 4.0f);
  const auto order = ranking(logits);
  // The nucleus at temperature 1, computed independently in double.
  double total = 0.0;
  const float max_logit = logits[order[0]];
  for (float l : logits) total += std::exp(double(l) - max_logit);
  double mass = 0.0;
  std::set<int32_t> nucleus;
  for (int32_t id : order) {
    nucleus.insert(id);
    mass += std::exp(double(logits[id]) - max_logit) / total;
    if (mass >= 0.9) break;
  }
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.9f;
  for (uint64_t step = 0; step < 40; ++step) {
    p.seed = step * 31;
    ASSERT_TRUE(nucleus.count(sampler.sample(logits, p, step).token));
  }
  p.top_k = 3;
  const std::set<int32_t> top3(order.begin(), order.begin() + 3);
  for (uint64_t step = 0; step < 300; ++step) {
    ASSERT_TRUE(top3.count(sampler.sample(logits, p, step).token));
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  const auto logits = random_logits(rng, 500, 0.5f);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.95f;
  auto run = [&](uint64_t seed) {
    Sampler sampler;  // fresh scratch: no hidden state may leak between runs
    p.seed = seed;
    std::vector<int32_t> out;
    for (uint64_t step = 0; step < 64; ++step) out.push_back(sampler.sample(logits, p, step).token);
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, DistributionMatchesSoftmaxOnTinyVocabulary) {
  const std::vector<float> logits = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f};
  for (float temperature : {1.0f, 0.5f, 2.0f}) {
    std::vector<double> expected(logits.size());
    double z = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) z += expected[i] = std::exp(logits[i] / temperature);
    Sampler sampler;
    SamplingParams p;
    p.temperature = temperature;
    p.seed = 7;
    std::vector<int> counts(logits.size());
    const int n = 40000;
    for (int step = 0; step < n; ++step) counts[sampler.sample(logits, p, step).token]++;
    for (size_t i = 0; i < logits.size(); ++i) {
      // 5 standard deviations of a binomial proportion at n = 40000.
      const double q = expected[i] / z;
      EXPECT_NEAR(counts[i] / double(n), q, 5 * std::sqrt(q * (1 - q) / n) + 1e-3)
          << "token " << i << " temperature " << temperature;
    }
  }
}

TEST(Sampler, LogprobsAreLogSoftmaxOfRawLogits) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -5.0f};
  double z = 0.0;
  for (float l : logits) z += std::exp(double(l));
  Sampler sampler;
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_logprobs = 3;
  const auto out = sampler.sample(logits, p, 0);
  EXPECT_NEAR(out.logprob, logits[out.token] - std::log(z), 1e-5);
  ASSERT_EQ(out.top.size(), 3u);
  EXPECT_EQ(out.top[0].token, 1);  // tie with 3: lower id first
  EXPECT_EQ(out.top[1].token, 3);
  EXPECT_EQ(out.top[2].token, 2);
  EXPECT_NEAR(out.top[2].logprob, 2.0 - std::log(z), 1e-5);
  p.top_logprobs = 50;  // more than the vocabulary and than kMaxTopLogprobs
  EXPECT_EQ(sampler.sample(logits, p, 0).top.size(), logits.size());
}

TEST(Sampler, HostileLogitsDoNotBreakIt) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Sampler sampler;
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.5f;
  p.top_logprobs = 2;
  EXPECT_EQ(sampler.sample(std::vector<float>{nan, nan, 1.0f}, p, 0).token, 2);
  EXPECT_EQ(sampler.sample(std::vector<float>{0.0f, inf, 1.0f}, p, 0).token, 1);
  const auto all_nan = sampler.sample(std::vector<float>{nan, nan}, p, 0);
  EXPECT_GE(all_nan.token, 0);
  EXPECT_LT(all_nan.token, 2);
  EXPECT_EQ(sampler.sample(std::vector<float>{}, p, 0).token, 0);
}

TEST(Sampler, UniformVariateIsInRangeAndSpread) {
  double sum = 0.0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const double u = uniform_variate(1234, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
  EXPECT_NE(uniform_variate(1, 0), uniform_variate(2, 0));
  EXPECT_NE(uniform_variate(1, 0), uniform_variate(1, 1));
}

}  // namespace
}  // namespace ringserve::engine
