// ringctl's reasoning view and ringbench's statistics, on their own.
#include <gmock/gmock.h>

#include "compare.h"
#include "reasoning_view.h"
#include "results.h"
#include "workload.h"

namespace {

using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;

std::string joined(const std::vector<ringctl::ReasoningView::Piece>& pieces, bool reasoning) {
  std::string out;
  for (const auto& p : pieces) {
    if (p.reasoning == reasoning) out += p.text;
  }
  return out;
}

TEST(ReasoningView, SplitsAcrossPiecesWithTheCloseTagSplit) {
  ringctl::ReasoningView view(true);
  std::vector<ringctl::ReasoningView::Piece> all;
  for (const char* piece : {"Let me th", "ink.</", "thi", "nk>The answer", " is 4."}) {
    auto p = view.push(piece);
    all.insert(all.end(), p.begin(), p.end());
  }
  auto tail = view.flush();
  all.insert(all.end(), tail.begin(), tail.end());
  EXPECT_THAT(joined(all, true), Eq("Let me think."));
  EXPECT_THAT(joined(all, false), Eq("The answer is 4."));
}

TEST(ReasoningView, AnOpeningTagInTheAnswerStartsReasoning) {
  ringctl::ReasoningView view(false);
  auto p = view.push("Hi <think>hmm</think>ok <thi");
  auto tail = view.flush();
  p.insert(p.end(), tail.begin(), tail.end());
  EXPECT_THAT(joined(p, false), Eq("Hi ok <thi"));
  EXPECT_THAT(joined(p, true), Eq("hmm"));
}

TEST(RingbenchStats, NearestRankDistribution) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  ringbench::Distribution d = ringbench::distribution(v);
  EXPECT_THAT(d.count, Eq(100u));
  EXPECT_DOUBLE_EQ(d.p50, 50);
  EXPECT_DOUBLE_EQ(d.p90, 90);
  EXPECT_DOUBLE_EQ(d.p99, 99);
  EXPECT_DOUBLE_EQ(d.mean, 50.5);
  EXPECT_THAT(ringbench::distribution({}).count, Eq(0u));
}

TEST(RingbenchStats, SummaryCountsOnlySuccessfulRequests) {
  ringbench::RequestRecord ok;
  ok.ok = true;
  ok.output_tokens = 10;
  ok.ttft_ms = 5;
  ok.itl_ms = {1, 2, 3};
  ringbench::RequestRecord bad;
  bad.error = "boom";
  ringbench::Summary s = ringbench::summarize({ok, ok, bad, bad}, 2.0);
  EXPECT_THAT(s.requests_ok, Eq(2));
  EXPECT_THAT(s.requests_failed, Eq(2));
  EXPECT_THAT(s.output_tokens, Eq(20));
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 10.0);
  EXPECT_THAT(s.itl_ms.count, Eq(6u));
  EXPECT_THAT(s.errors, ElementsAre("boom"));
}

TEST(RingbenchWorkload, PromptsHaveExactLengthsInRangeAndAreSeeded) {
  auto a = ringbench::make_prompts(3, 17, 5, 50, 42);
  auto b = ringbench::make_prompts(3, 17, 5, 50, 42);
  auto c = ringbench::make_prompts(3, 17, 5, 50, 43);
  EXPECT_THAT(a, Eq(b));
  EXPECT_NE(a, c);
  for (const auto& p : a) {
    EXPECT_THAT(p.size(), Eq(17u));
    for (int32_t id : p) {
      EXPECT_GE(id, 5);
      EXPECT_LT(id, 50);
    }
  }
}

TEST(RingbenchWorkload, PoissonArrivalsHaveTheAskedRate) {
  auto at = ringbench::poisson_arrivals(20000, 4.0, 7);
  EXPECT_DOUBLE_EQ(at[0], 0.0);
  for (size_t i = 1; i < at.size(); ++i) EXPECT_GE(at[i], at[i - 1]);
  const double rate = static_cast<double>(at.size() - 1) / at.back();
  EXPECT_NEAR(rate, 4.0, 0.2);  // 20k samples: the standard error is ~0.03
}

TEST(RingbenchCompare, RatiosAndRejectedFiles) {
  ringbench::Report a;
  a.summary.output_tokens_per_s = 100;
  a.summary.ttft_ms.p50 = 20;
  ringbench::Report b = a;
  b.summary.output_tokens_per_s = 150;
  b.summary.ttft_ms.p50 = 10;
  const std::string out =
      ringbench::format_comparison(ringbench::report_json(a), ringbench::report_json(b), "a", "b");
  EXPECT_THAT(out, HasSubstr("1.50x +"));
  EXPECT_THAT(out, HasSubstr("0.50x +"));
  EXPECT_FALSE(ringbench::load_report("/nonexistent/file.json"));
}

}  // namespace
