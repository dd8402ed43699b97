// The CPU engine against Hugging Face transformers (float64, see
// golden.json "reference") on the two fixture models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cpu_engine.h"
#include "engine/sampler.h"
#include "model/loader.h"
#include "model/tensor_source.h"
#include "support/test_support.h"

namespace ringserve::engine {
namespace {

using ringserve::testing::fixture_path;
using ringserve::testing::read_file;

struct TopK {
  std::vector<int32_t> ids;
  std::vector<double> logits;
};

struct GoldenCase {
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;
  std::vector<double> first_logits;
  std::vector<int32_t> argmax_each_position;
  std::vector<TopK> step_top5;  // golden logits of the 5 best ids at each greedy step
};

std::vector<GoldenCase> load_golden(const std::string& model) {
  const auto json =
      nlohmann::json::parse(read_file(fixture_path("models/" + model + "/golden.json")));
  std::vector<GoldenCase> cases;
  for (const auto& c : json.at("cases")) {
    GoldenCase g{c.at("prompt").get<std::vector<int32_t>>(),
                 c.at("greedy").get<std::vector<int32_t>>(),
                 c.at("first_logits").get<std::vector<double>>(),
                 c.at("argmax_each_position").get<std::vector<int32_t>>(),
                 {}};
    for (const auto& t : c.at("step_top5")) {
      g.step_top5.push_back(
          {t.at("ids").get<std::vector<int32_t>>(), t.at("logits").get<std::vector<double>>()});
    }
    cases.push_back(std::move(g));
  }
  return cases;
}

enum class Head { kBf16, kInt8 };

// The fixture's weights as the loader gives them, with the output head in
// bf16 (read here if the loader did not keep it) or forced to INT8.
Expected<model::ModelWeights> load_fixture(const std::string& name, Head head) {
  const auto dir = fixture_path("models/" + name);
  auto weights = RS_TRY(model::load_model(dir.string(), {}));
  if (head == Head::kInt8) {
    weights.lm_head_bf16 = {};
    return weights;
  }
  if (weights.lm_head_bf16.rows > 0) return weights;
  auto source = RS_TRY(model::TensorSource::open_dir(dir));
  auto view = RS_TRY(source.get("lm_head.weight"));
  if (view.dtype != model::DType::kBF16 || view.shape.size() != 2) {
    return make_error(Errc::kCorruptData, "{}: expected a 2-d BF16 tensor", view.where());
  }
  auto& h = weights.lm_head_bf16;
  h.rows = static_cast<int>(view.shape[0]);
  h.cols = static_cast<int>(view.shape[1]);
  h.bf16.resize(view.bytes.size() / 2);
  std::memcpy(h.bf16.data(), view.bytes.data(), view.bytes.size());
  return weights;
}

std::unique_ptr<CpuEngine> make_engine(const std::string& model, int threads,
                                       Head head = Head::kBf16, int max_batch = 4) {
  auto weights = load_fixture(model, head);
  EXPECT_TRUE(weights) << weights.error().to_string();
  if (!weights) return nullptr;
  EngineOptions options;
  options.backend = Backend::kCpu;
  options.threads = threads;
  options.max_batch = max_batch;
  auto engine = CpuEngine::create(options, std::move(weights).value());
  EXPECT_TRUE(engine) << engine.error().to_string();
  return engine ? std::move(engine).value() : nullptr;
}

struct Param {
  std::string model;
  // Bound on |logit - golden| at any position.
  //
  // int8exact: every layer's linear weights are exactly representable as
  // per-channel INT8 and the head is used in bf16, so only fp32-vs-float64
  // arithmetic differs (measured <= 1e-6): the bound 1e-3 applies.
  //
  // tiny-qwen2: its bf16 weights are rounded to INT8, each off by at most
  // max|row| / 254 (0.4% of the row's range). These random-sign errors
  // grow like sqrt(cols), as the outputs do, so each projection carries
  // ~0.2-0.4% relative error; 7 projections per layer over 2 layers compose
  // to ~1-2% of the logit scale (~1.2), i.e. 0.012-0.025. We allow 0.03
  // (measured max 0.017). Real bugs are far outside it: exact RoPE
  // frequencies instead of bf16 ones move logits by 4e-3, a wrong rope
  // theta by 0.7, no RoPE or interleaved RoPE by 1.0.
  double logit_tolerance;
  // Whether every golden greedy step must match. With the tolerance above,
  // a step can only flip when the golden top-2 gap is below 2 * tolerance;
  // tiny-qwen2 has gaps down to 0.006, so INT8 rounding legitimately changes
  // its continuation after such a step (a float64 Python reference with the
  // same INT8-rounded weights flips at the same places). Its checks stop
  // or skip there; the int8exact model's smallest gap (0.004) is above
  // 2e-3, so there every step is checked.
  bool every_step;
};

class GoldenTest : public ::testing::TestWithParam<Param> {
 protected:
  // Steps before the first one whose golden top-2 gap is within 2 * tol.
  size_t decisive_prefix(const GoldenCase& c) const {
    for (size_t k = 0; k < c.step_top5.size(); ++k) {
      const auto& l = c.step_top5[k].logits;
      if (l[0] - l[1] <= 2 * GetParam().logit_tolerance) return k + 1;
    }
    return c.step_top5.size();
  }
};

TEST_P(GoldenTest, GreedyContinuationMatches) {
  const auto cases = load_golden(GetParam().model);
  auto engine = make_engine(GetParam().model, 2);
  ASSERT_NE(engine, nullptr);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    ASSERT_TRUE(engine->add({i + 1, c.prompt, static_cast<int>(c.greedy.size()), {}}));
    std::vector<int32_t> out;
    while (out.size() < c.greedy.size()) {
      auto step = engine->step();
      ASSERT_TRUE(step) << step.error().to_string();
      ASSERT_EQ(step->tokens.size(), 1u);
      out.push_back(step->tokens[0].token);
    }
    engine->release(i + 1);
    const size_t n = GetParam().every_step ? c.greedy.size() : decisive_prefix(c);
    EXPECT_EQ(std::vector<int32_t>(out.begin(), out.begin() + n),
              std::vector<int32_t>(c.greedy.begin(), c.greedy.begin() + n))
        << "case " << i << " (prompt of " << c.prompt.size() << "), first " << n << " steps";
  }
}

TEST_P(GoldenTest, AllCasesBatchedTogetherMatchAlone) {
  const auto cases = load_golden(GetParam().model);
  auto batched = make_engine(GetParam().model, 2, Head::kBf16, static_cast<int>(cases.size()));
  auto alone = make_engine(GetParam().model, 1);
  ASSERT_NE(batched, nullptr);
  ASSERT_NE(alone, nullptr);
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(batched->add({i, cases[i].prompt, static_cast<int>(cases[i].greedy.size()), {}}));
  }
  std::vector<std::vector<int32_t>> out(cases.size());
  for (size_t s = 0; s < cases[0].greedy.size(); ++s) {
    auto step = batched->step();
    ASSERT_TRUE(step) << step.error().to_string();
    for (const auto& t : step->tokens) out[t.id].push_back(t.token);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(alone->add({100 + i, cases[i].prompt, 12, {}}));
    std::vector<int32_t> single;
    for (int s = 0; s < 12; ++s) single.push_back(alone->step()->tokens.at(0).token);
    alone->release(100 + i);
    EXPECT_EQ(out[i], single) << "case " << i;
    if (GetParam().every_step) {
      EXPECT_EQ(out[i], cases[i].greedy) << "case " << i;
    }
  }
}

TEST_P(GoldenTest, ArgmaxAtEveryPositionMatches) {
  const auto cases = load_golden(GetParam().model);
  auto engine = make_engine(GetParam().model, 2);
  ASSERT_NE(engine, nullptr);
  const int vocab = engine->info().vocab_size;
  const double tol = GetParam().logit_tolerance;
  int checked = 0, positions = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    // The golden positions cover the prompt followed by the greedy tokens.
    std::vector<int32_t> tokens = c.prompt;
    tokens.insert(tokens.end(), c.greedy.begin(), c.greedy.end());
    ASSERT_EQ(tokens.size(), c.argmax_each_position.size());
    auto logits = engine->model().forward_all_logits(tokens);
    ASSERT_TRUE(logits) << logits.error().to_string();
    for (size_t p = 0; p < tokens.size(); ++p) {
      const std::span<const float> row(logits->data() + p * vocab, vocab);
      const int32_t best = argmax(row);
      // If our logits are within tol of golden, a gap over 2 * tol between
      // our best and second best means golden must agree on the argmax.
      float second = -INFINITY;
      for (int v = 0; v < vocab; ++v) {
        if (v != best) second = std::max(second, row[v]);
      }
      ++positions;
      if (!GetParam().every_step && row[best] - second <= 2 * tol) continue;
      ++checked;
      EXPECT_EQ(best, c.argmax_each_position[p]) << "case " << i << " position " << p;
    }
  }
  std::printf("%s: argmax checked at %d of %d positions\n", GetParam().model.c_str(), checked,
              positions);
  EXPECT_GE(checked, positions / 2);
}

TEST_P(GoldenTest, LogitsWithinTolerance) {
  const auto cases = load_golden(GetParam().model);
  auto engine = make_engine(GetParam().model, 1);
  ASSERT_NE(engine, nullptr);
  const int vocab = engine->info().vocab_size;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    ASSERT_EQ(c.first_logits.size(), static_cast<size_t>(vocab));
    // Teacher-forced over prompt + golden greedy tokens: the first-step row
    // is compared in full, every later step on its golden top-5 ids.
    std::vector<int32_t> tokens = c.prompt;
    tokens.insert(tokens.end(), c.greedy.begin(), c.greedy.end());
    auto logits = engine->model().forward_all_logits(tokens);
    ASSERT_TRUE(logits);
    double first_err = 0.0, step_err = 0.0;
    const float* first = logits->data() + (c.prompt.size() - 1) * vocab;
    for (int v = 0; v < vocab; ++v) {
      first_err = std::max(first_err, std::abs(static_cast<double>(first[v]) - c.first_logits[v]));
    }
    for (size_t k = 0; k < c.step_top5.size(); ++k) {
      const float* row = logits->data() + (c.prompt.size() - 1 + k) * vocab;
      for (size_t j = 0; j < c.step_top5[k].ids.size(); ++j) {
        step_err = std::max(step_err, std::abs(static_cast<double>(row[c.step_top5[k].ids[j]]) -
                                               c.step_top5[k].logits[j]));
      }
    }
    EXPECT_LE(first_err, GetParam().logit_tolerance) << "case " << i;
    EXPECT_LE(step_err, GetParam().logit_tolerance) << "case " << i;
    std::printf("%s case %zu: max abs error: first-step logits %.3g, step top-5 %.3g\n",
                GetParam().model.c_str(), i, first_err, step_err);
  }
}

// The same model with an INT8 head: the head's rounding (its weights are
// not on the INT8 grid) is the only difference, which shows why the
// reference keeps the head in bf16: 0.0095 here against 6e-7 with bf16.
TEST(GoldenInt8Head, FirstStepErrorIsTheHeadRounding) {
  const auto cases = load_golden("tiny-qwen2-int8exact");
  auto engine = make_engine("tiny-qwen2-int8exact", 1, Head::kInt8);
  ASSERT_NE(engine, nullptr);
  const int vocab = engine->info().vocab_size;
  auto logits = engine->model().forward_all_logits(cases[0].prompt);
  ASSERT_TRUE(logits);
  double err = 0.0;
  for (int v = 0; v < vocab; ++v) {
    err = std::max(err, std::abs(static_cast<double>((*logits)[v]) - cases[0].first_logits[v]));
  }
  EXPECT_GT(err, 1e-3);
  EXPECT_LT(err, 0.03);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest,
                         ::testing::Values(Param{"tiny-qwen2-int8exact", 1e-3, true},
                                           Param{"tiny-qwen2", 0.03, false}),
                         [](const auto& info) {
                           std::string name = info.param.model;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace ringserve::engine
