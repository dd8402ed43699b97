// GPU sampling: greedy with ties, logprobs, top-k / top-p support, seeded
// determinism and the empirical distribution of temperature sampling.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "device_buffer.h"
#include "engine/sampler.h"
#include "reference.h"
#include "sampling.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

using kernels::SampleResult;
using kernels::SamplingSlot;

// The engine's path: logits as the head's two halves, summed in place, the
// maximum and log-sum-exp from per-slice partials (sample_tokens_from_halves),
// with the given strategy. routes: how each row was drawn.
std::vector<SampleResult> sample_halves_with(std::vector<float>& halves, int batch, int vocab,
                                             const std::vector<SamplingSlot>& slots,
                                             kernels::SampleStrategy strategy,
                                             std::vector<kernels::SampleRoute>* routes = nullptr) {
  DeviceBuffer<float> dl(halves), scratch(static_cast<size_t>(batch) * vocab);
  DeviceBuffer<kernels::SamplingRowScratch> rows(batch);
  DeviceBuffer<SamplingSlot> ds(slots);
  DeviceBuffer<SampleResult> out(batch);
  out.poison();
  rows.poison();
  auto st = kernels::sample_tokens_from_halves(dl.get(), batch, vocab, ds.get(), scratch.get(),
                                               rows.get(), out.get(), strategy, nullptr);
  EXPECT_TRUE(st) << (st ? "" : st.error().to_string());
  halves = dl.download();
  if (routes) {
    routes->resize(batch);
    for (int b = 0; b < batch; ++b)
      cuda_ok(cudaMemcpy(&(*routes)[b], &rows.get()[b].route, sizeof(kernels::SampleRoute),
                         cudaMemcpyDeviceToHost),
              "route");
  }
  return out.download();
}

void expect_same_draws(const std::vector<SampleResult>& a, const std::vector<SampleResult>& b,
                       const std::vector<SamplingSlot>& slots, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t r = 0; r < a.size(); ++r) {
    EXPECT_EQ(a[r].token, b[r].token) << what << ", row " << r;
    EXPECT_EQ(a[r].logprob, b[r].logprob) << what << ", row " << r;
    for (int k = 0; k < std::min(slots[r].top_logprobs, kernels::kMaxTopLogprobs); ++k)
      EXPECT_EQ(a[r].top_ids[k], b[r].top_ids[k]) << what << ", row " << r;
  }
}

// Both strategies on the same halves: the same tokens, bit for bit (the
// halves come back summed, as the engine leaves them).
std::vector<SampleResult> sample_halves(std::vector<float>& halves, int batch, int vocab,
                                        const std::vector<SamplingSlot>& slots) {
  std::vector<float> again(halves);
  const auto one =
      sample_halves_with(halves, batch, vocab, slots, kernels::SampleStrategy::kOneBlock);
  const auto cand =
      sample_halves_with(again, batch, vocab, slots, kernels::SampleStrategy::kCandidates);
  expect_same_draws(one, cand, slots, "one block against candidates");
  return one;
}

// Samples `logits` [batch][vocab] with sample_tokens, and again as halves
// (the logits and a zero second half) with sample_tokens_from_halves: every
// test below checks both, which must draw the same tokens and report the
// same log-probabilities up to the order of their sums.
std::vector<SampleResult> sample(const std::vector<float>& logits, int batch, int vocab,
                                 const std::vector<SamplingSlot>& slots) {
  DeviceBuffer<float> dl(logits), scratch(static_cast<size_t>(batch) * vocab);
  DeviceBuffer<SamplingSlot> ds(slots);
  DeviceBuffer<SampleResult> out(batch);
  out.poison();
  auto st = kernels::sample_tokens(dl.get(), vocab, batch, vocab, ds.get(), scratch.get(),
                                   out.get(), nullptr);
  EXPECT_TRUE(st) << (st ? "" : st.error().to_string());
  auto r = out.download();

  std::vector<float> halves(logits);
  halves.resize(2 * logits.size(), 0.0f);
  const auto h = sample_halves(halves, batch, vocab, slots);
  for (int b = 0; b < batch; ++b) {
    EXPECT_EQ(h[b].token, r[b].token) << "row " << b;
    EXPECT_NEAR(h[b].logprob, r[b].logprob, 1e-5) << "row " << b;
    for (int k = 0; k < std::min(slots[b].top_logprobs, kernels::kMaxTopLogprobs); ++k) {
      EXPECT_EQ(h[b].top_ids[k], r[b].top_ids[k]) << "row " << b;
      EXPECT_NEAR(h[b].top_logprobs[k], r[b].top_logprobs[k], 1e-5) << "row " << b;
    }
  }
  return r;
}

std::vector<double> log_softmax(const float* l, int n) {
  double m = -INFINITY;
  for (int i = 0; i < n; ++i) m = std::max(m, double(l[i]));
  double z = 0;
  for (int i = 0; i < n; ++i) z += std::exp(l[i] - m);
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) out[i] = l[i] - m - std::log(z);
  return out;
}

TEST(Sampling, GreedyTakesLowestIdOnTiesAndReportsLogprobs) {
  const int V = 152064;
  std::mt19937_64 rng(test_seed());
  auto logits = ref::random_f32(2 * V, rng, -10.0f, 10.0f);
  logits[777] = 30.0f;
  logits[99999] = 30.0f;  // tie: 777 wins
  logits[V + 151000] = 25.0f;
  SamplingSlot greedy;
  greedy.top_logprobs = 5;
  auto r = sample(logits, 2, V, {greedy, greedy});
  EXPECT_EQ(r[0].token, 777);
  EXPECT_EQ(r[1].token, 151000);
  for (int b = 0; b < 2; ++b) {
    auto lp = log_softmax(logits.data() + static_cast<size_t>(b) * V, V);
    EXPECT_NEAR(r[b].logprob, lp[r[b].token], 1e-4);
    for (int k = 0; k < 5; ++k) EXPECT_NEAR(r[b].top_logprobs[k], lp[r[b].top_ids[k]], 1e-4);
    for (int k = 1; k < 5; ++k) EXPECT_GE(r[b].top_logprobs[k - 1], r[b].top_logprobs[k]);
  }
  EXPECT_EQ(r[0].top_ids[0], 777);
  EXPECT_EQ(r[0].top_ids[1], 99999);
}

TEST(Sampling, TopKAndTopPRestrictTheSupport) {
  const int V = 5000, B = 256;
  std::mt19937_64 rng(test_seed());
  auto row = ref::random_f32(V, rng, -3.0f, 3.0f);
  std::vector<float> logits;
  std::vector<SamplingSlot> slots(B);
  for (int b = 0; b < B; ++b) {
    logits.insert(logits.end(), row.begin(), row.end());
    slots[b].temperature = 1.5f;
    slots[b].seed = 42;
    slots[b].counter = b;
    slots[b].top_k = b % 2 == 0 ? 10 : 0;
    slots[b].top_p = b % 2 == 0 ? 1.0f : 0.3f;
  }
  auto r = sample(logits, B, V, slots);
  std::vector<int> order(V);
  for (int i = 0; i < V; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  std::set<int> top10(order.begin(), order.begin() + 10);
  // Nucleus of 0.3 at temperature 1.5.
  std::vector<double> p(V);
  double z = 0;
  for (int i = 0; i < V; ++i) z += (p[i] = std::exp((row[i] - row[order[0]]) / 1.5));
  std::set<int> nucleus;
  double cum = 0;
  for (int i : order) {
    nucleus.insert(i);
    cum += p[i] / z;
    if (cum >= 0.3) break;
  }
  std::set<int> seen_k, seen_p;
  for (int b = 0; b < B; ++b) {
    if (b % 2 == 0) {
      EXPECT_TRUE(top10.count(r[b].token)) << r[b].token;
      seen_k.insert(r[b].token);
    } else {
      EXPECT_TRUE(nucleus.count(r[b].token)) << r[b].token;
      seen_p.insert(r[b].token);
    }
  }
  EXPECT_GT(seen_k.size(), 5u);  // it samples, it does not just take the argmax
  EXPECT_GT(seen_p.size(), std::min<size_t>(3, nucleus.size()) - 1);
}

TEST(Sampling, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const int V = 32000, B = 64;
  std::mt19937_64 rng(test_seed());
  auto row = ref::random_f32(V, rng, -2.0f, 2.0f);
  std::vector<float> logits;
  std::vector<SamplingSlot> a(B), b(B);
  for (int i = 0; i < B; ++i) {
    logits.insert(logits.end(), row.begin(), row.end());
    a[i].temperature = b[i].temperature = 1.0f;
    a[i].top_p = b[i].top_p = 0.95f;
    a[i].seed = 7;
    b[i].seed = 8;
    a[i].counter = b[i].counter = i;
  }
  auto r1 = sample(logits, B, V, a), r2 = sample(logits, B, V, a), r3 = sample(logits, B, V, b);
  int diff = 0;
  for (int i = 0; i < B; ++i) {
    EXPECT_EQ(r1[i].token, r2[i].token);
    diff += r1[i].token != r3[i].token;
  }
  EXPECT_GT(diff, B / 2);
}

TEST(Sampling, TemperatureSamplingFollowsTheDistribution) {
  const int V = 8, B = 4096;
  const std::vector<float> row = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.2f, -0.3f};
  std::vector<float> logits;
  std::vector<SamplingSlot> slots(B);
  for (int b = 0; b < B; ++b) {
    logits.insert(logits.end(), row.begin(), row.end());
    slots[b].temperature = 0.8f;
    slots[b].seed = test_seed();
    slots[b].counter = b;
  }
  auto r = sample(logits, B, V, slots);
  std::vector<double> p(V);
  double z = 0;
  for (int i = 0; i < V; ++i) z += (p[i] = std::exp(row[i] / 0.8));
  std::vector<int> count(V);
  for (auto& s : r) {
    ASSERT_GE(s.token, 0);
    ASSERT_LT(s.token, V);
    ++count[s.token];
  }
  for (int i = 0; i < V; ++i) {
    const double expect = B * p[i] / z, sd = std::sqrt(expect * (1 - p[i] / z));
    EXPECT_NEAR(count[i], expect, 5 * sd + 2) << "token " << i;
  }
}

// The two halves are summed in fp32 before anything else (the head's hi + lo
// rows), left summed in place, and the greedy token, its log-probability and
// the top ids are those of the sums; a vocabulary that does not divide into
// the slices, and one smaller than their number, included.
TEST(Sampling, HalvesAreSummedThenSampled) {
  std::mt19937_64 rng(test_seed());
  for (const int V : {152064, 1001, 40}) {
    const int B = 3;
    auto halves = ref::random_f32(2 * static_cast<size_t>(B) * V, rng, -8.0f, 8.0f);
    // Row 1's best token only wins once its second half is added.
    halves[V + 7] = 20.0f;
    halves[V + V / 2] = 19.0f;
    halves[static_cast<size_t>(B + 1) * V + 7] = 0.0f;
    halves[static_cast<size_t>(B + 1) * V + V / 2] = 2.5f;
    std::vector<float> sums(static_cast<size_t>(B) * V);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] = halves[i] + halves[sums.size() + i];
    SamplingSlot greedy;
    greedy.top_logprobs = 3;
    std::vector<SamplingSlot> slots(B, greedy);
    slots[2].temperature = 0.8f;
    slots[2].seed = 5;
    auto got = sample_halves(halves, B, V, slots);
    for (size_t i = 0; i < sums.size(); ++i) ASSERT_EQ(halves[i], sums[i]) << "V=" << V << " " << i;
    const auto want = sample(sums, B, V, slots);
    EXPECT_EQ(got[1].token, V / 2) << "V=" << V;
    for (int b = 0; b < B; ++b) {
      EXPECT_EQ(got[b].token, want[b].token) << "V=" << V << " row " << b;
      const auto lp = log_softmax(sums.data() + static_cast<size_t>(b) * V, V);
      EXPECT_NEAR(got[b].logprob, lp[got[b].token], 1e-4) << "V=" << V << " row " << b;
      for (int k = 0; k < 3; ++k) EXPECT_EQ(got[b].top_ids[k], want[b].top_ids[k]);
    }
  }
}

TEST(Sampling, RejectsBadShapes) {
  EXPECT_FALSE(kernels::sample_tokens(nullptr, 10, 1, 10, nullptr, nullptr, nullptr, nullptr));
  DeviceBuffer<float> l(10);
  EXPECT_FALSE(kernels::sample_tokens(l.get(), 5, 1, 10, nullptr, nullptr, nullptr, nullptr));
  l.upload(std::vector<float>(10, 0.0f));
  DeviceBuffer<float> scratch(10);
  DeviceBuffer<SamplingSlot> slot(std::vector<SamplingSlot>(1));
  DeviceBuffer<kernels::SamplingRowScratch> rows(1);
  DeviceBuffer<SampleResult> out(1);
  for (auto strategy : {kernels::SampleStrategy::kOneBlock, kernels::SampleStrategy::kCandidates}) {
    EXPECT_FALSE(kernels::sample_tokens_from_halves(l.get(), 0, 5, slot.get(), scratch.get(),
                                                    rows.get(), out.get(), strategy, nullptr));
    EXPECT_FALSE(kernels::sample_tokens_from_halves(l.get(), 1, 5, slot.get(), scratch.get(),
                                                    nullptr, out.get(), strategy, nullptr));
    EXPECT_TRUE(kernels::sample_tokens_from_halves(l.get(), 1, 5, slot.get(), scratch.get(),
                                                   rows.get(), out.get(), strategy, nullptr));
  }
}

}  // namespace
}  // namespace ringserve::testing

namespace ringserve::testing {
namespace {

// Same logits, same (seed, step): the GPU sampler draws the CPU reference
// sampler's token (engine/sampler.h). Ties in probability rounding can differ
// in principle; on random logits none should.
TEST(Sampling, DrawsTheCpuSamplersTokens) {
  const int V = 3000, B = 96;
  std::mt19937_64 rng(test_seed());
  std::vector<float> logits = ref::random_f32(static_cast<size_t>(B) * V, rng, -4.0f, 4.0f);
  std::vector<SamplingSlot> slots(B);
  std::vector<engine::SamplingParams> params(B);
  for (int b = 0; b < B; ++b) {
    auto& p = params[b];
    p.temperature = (b % 3 == 0) ? 0.7f : 1.2f;
    p.top_k = (b % 4 == 1) ? 40 : 0;
    p.top_p = (b % 4 >= 2) ? 0.85f : 1.0f;
    p.seed = 1000 + b;
    p.top_logprobs = b % 5;
    slots[b] = {p.temperature,  p.top_p, p.top_k,
                p.top_logprobs, p.seed,  static_cast<uint64_t>(b % 7)};
  }
  auto r = sample(logits, B, V, slots);
  engine::Sampler cpu;
  int same = 0;
  for (int b = 0; b < B; ++b) {
    auto want = cpu.sample(std::span<const float>(logits.data() + static_cast<size_t>(b) * V, V),
                           params[b], b % 7);
    same += want.token == r[b].token;
    EXPECT_NEAR(r[b].logprob, want.logprob, 1e-4) << b;
    ASSERT_EQ(want.top.size(), static_cast<size_t>(params[b].top_logprobs));
    for (size_t k = 0; k < want.top.size(); ++k) EXPECT_EQ(r[b].top_ids[k], want.top[k].token);
  }
  EXPECT_GE(same, B - 1) << same << " of " << B;
}

}  // namespace
}  // namespace ringserve::testing

namespace ringserve::testing {
namespace {

// The candidates strategy draws the one-block sampler's tokens, bit for bit,
// on the distributions that decide its route: peaked logits (the cuts fall
// in a few sparse bins), flat ones (a thousand tokens or more a bin: the
// cuts' bins may or may not fit), a single bin holding the whole vocabulary
// (the same launch falls back to one block), exact ties across the top_k
// and top_p boundaries, a top_k above the number of tokens with any mass,
// masked tokens, untruncated rows (the id-order slice) and greedy rows.
// Where a row's route does not depend on the random data it is checked, so
// every path is known to have run.
TEST(Sampling, CandidatesDrawTheOneBlockTokens) {
  const int V = 152064;
  using Route = kernels::SampleRoute;
  std::mt19937_64 rng(test_seed());
  std::normal_distribution<float> bulk(0.0f, 2.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  auto peaked = [&] {  // a bulk, and eight tokens far above it
    std::vector<float> l(V);
    for (auto& x : l) x = bulk(rng);
    for (int j = 0; j < 8; ++j) l[rng() % V] = 18.0f + 4.0f * unit(rng);
    return l;
  };
  auto flat = [&] { return ref::random_f32(V, rng, -1.0f, 1.0f); };
  auto tied = [&] {  // 300 tokens at 10 and 300 at 9.5 over a bulk below 8
    std::vector<float> l(V);
    for (auto& x : l) x = std::min(bulk(rng), 8.0f);
    for (int j = 0; j < 300; ++j) l[rng() % V] = 10.0f;
    for (int j = 0; j < 300; ++j) l[rng() % V] = 9.5f;
    return l;
  };
  auto equal = [&] { return std::vector<float>(V, 0.25f); };
  auto masked = [&] {
    auto l = peaked();
    for (int i = 0; i < V; i += 2) l[i] = -INFINITY;
    return l;
  };
  struct Row {
    std::vector<float> logits;
    SamplingSlot slot;
    std::optional<Route> route;  // the one the candidates strategy must take
  };
  std::vector<Row> rows;
  auto add = [&](std::vector<float> l, float t, int k, float p, std::optional<Route> route) {
    SamplingSlot s;
    s.temperature = t;
    s.top_k = k;
    s.top_p = p;
    s.seed = rng();
    s.counter = rng() % 1000;
    s.top_logprobs = static_cast<int>(rows.size() % 4);
    rows.push_back({std::move(l), s, route});
  };
  for (const float t : {0.6f, 1.0f}) {
    add(peaked(), t, 40, 0.95f, Route::kCandidates);
    add(peaked(), t, 0, 0.95f, Route::kCandidates);
    add(peaked(), t, 1000, 0.9f, Route::kCandidates);
    add(peaked(), t, 20, 1.0f, Route::kCandidates);
    add(peaked(), t, 0, 0.0f, Route::kCandidates);
    add(peaked(), t, 0, 1.0f, Route::kIdOrder);
    add(peaked(), t, V, 1.0f, Route::kIdOrder);
    add(peaked(), t, V - 1, 1.0f, Route::kCandidates);
    add(flat(), t, 40, 0.9f, Route::kCandidates);  // the 40 share the top bin
    add(flat(), t, 0, 0.9f, std::nullopt);
    add(flat(), t, 5000, 1.0f, std::nullopt);
    add(flat(), t, 5000, 0.5f, std::nullopt);
    add(flat(), t, 0, 1.0f, Route::kIdOrder);
    add(equal(), t, 0, 0.9f, Route::kOneBlock);
    add(equal(), t, 5000, 1.0f, Route::kOneBlock);
    add(tied(), t, 400, 1.0f, Route::kCandidates);
    add(tied(), t, 0, 0.5f, Route::kCandidates);
    add(tied(), t, 450, 0.8f, Route::kCandidates);
    add(masked(), t, 40, 0.95f, Route::kCandidates);
    add(masked(), t, 0, 1.0f, Route::kIdOrder);
  }
  // Only a few tokens within 27.7 * 0.05 of the maximum have any mass.
  add(peaked(), 0.05f, 100, 1.0f, Route::kCandidates);
  add(peaked(), 0.05f, 100, 0.9f, Route::kCandidates);
  add(flat(), 50.0f, 0, 0.95f, Route::kOneBlock);  // ~50k tokens a bin
  add(peaked(), 0.0f, 0, 1.0f, Route::kGreedy);
  add(peaked(), 0.8f, 1, 1.0f, Route::kGreedy);

  const int B = static_cast<int>(rows.size());
  std::vector<float> halves(2 * static_cast<size_t>(B) * V, 0.0f);
  std::vector<SamplingSlot> slots;
  for (int b = 0; b < B; ++b) {
    std::copy(rows[b].logits.begin(), rows[b].logits.end(),
              halves.begin() + static_cast<size_t>(b) * V);
    slots.push_back(rows[b].slot);
  }
  std::vector<float> again(halves);
  std::vector<Route> one_routes, cand_routes;
  const auto one =
      sample_halves_with(halves, B, V, slots, kernels::SampleStrategy::kOneBlock, &one_routes);
  const auto cand =
      sample_halves_with(again, B, V, slots, kernels::SampleStrategy::kCandidates, &cand_routes);
  expect_same_draws(one, cand, slots, "one block against candidates");
  for (int b = 0; b < B; ++b) {
    ASSERT_GE(cand[b].token, 0) << "row " << b;
    ASSERT_LT(cand[b].token, V) << "row " << b;
    const bool greedy = rows[b].route == Route::kGreedy;
    EXPECT_EQ(one_routes[b], greedy ? Route::kGreedy : Route::kOneBlock) << "row " << b;
    if (rows[b].route)
      EXPECT_EQ(cand_routes[b], *rows[b].route)
          << "row " << b << ": T " << slots[b].temperature << " top_k " << slots[b].top_k
          << " top_p " << slots[b].top_p;
    else
      EXPECT_NE(cand_routes[b], Route::kGreedy) << "row " << b;
    if (slots[b].top_p == 0.0f) {  // the nucleus is the most likely token
      const auto& l = rows[b].logits;
      EXPECT_EQ(cand[b].token, std::max_element(l.begin(), l.end()) - l.begin()) << "row " << b;
    }
    EXPECT_GT(rows[b].logits[cand[b].token], -INFINITY) << "row " << b;  // never a masked token
  }
}

// Many draws from one peaked row: the candidates strategy's tokens are the
// one-block sampler's at every counter, and spread over the nucleus.
TEST(Sampling, CandidatesAgreeAcrossManyDraws) {
  const int V = 32000, B = 512;
  std::mt19937_64 rng(test_seed());
  std::normal_distribution<float> bulk(0.0f, 1.5f);
  std::vector<float> row(V);
  for (auto& x : row) x = bulk(rng);
  for (int j = 0; j < 30; ++j) row[rng() % V] = 9.0f + 0.2f * static_cast<float>(j % 7);
  std::vector<float> halves(2 * static_cast<size_t>(B) * V, 0.0f);
  std::vector<SamplingSlot> slots(B);
  for (int b = 0; b < B; ++b) {
    std::copy(row.begin(), row.end(), halves.begin() + static_cast<size_t>(b) * V);
    slots[b].temperature = 0.7f;
    slots[b].top_k = b % 3 == 0 ? 16 : 0;
    slots[b].top_p = b % 3 == 1 ? 1.0f : 0.9f;
    slots[b].seed = 77;
    slots[b].counter = b;
  }
  std::vector<float> again(halves);
  std::vector<kernels::SampleRoute> routes;
  const auto one = sample_halves_with(halves, B, V, slots, kernels::SampleStrategy::kOneBlock);
  const auto cand =
      sample_halves_with(again, B, V, slots, kernels::SampleStrategy::kCandidates, &routes);
  expect_same_draws(one, cand, slots, "one block against candidates");
  std::set<int> seen;
  for (int b = 0; b < B; ++b) {
    const auto want =
        b % 3 == 1 ? kernels::SampleRoute::kIdOrder : kernels::SampleRoute::kCandidates;
    EXPECT_EQ(routes[b], want) << "row " << b;
    seen.insert(cand[b].token);
  }
  EXPECT_GT(seen.size(), 5u);
}

}  // namespace
}  // namespace ringserve::testing
