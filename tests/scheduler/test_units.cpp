// The pieces on their own: the batch rule, the stop matcher, percentiles.
#include <gmock/gmock.h>

#include "scheduler/batch_policy.h"
#include "scheduler/options.h"
#include "scheduler/stats.h"
#include "scheduler/stop_matcher.h"

namespace ringserve::serve {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using ::testing::Eq;

const Clock::time_point kT0 = Clock::time_point(std::chrono::seconds(100));

TEST(BatchPolicy, NothingWaitingNothingToDo) {
  AdmissionDecision d = decide_admission({}, QueueView{0, kT0, 0}, kT0);
  EXPECT_FALSE(d.admit);
  EXPECT_FALSE(d.wake_at);
}

TEST(BatchPolicy, WindowRule) {
  SchedulerOptions o;
  EXPECT_TRUE(decide_admission(o, {4, kT0, 0}, kT0).admit);
  AdmissionDecision d = decide_admission(o, {3, kT0, 0}, kT0 + milliseconds(9));
  EXPECT_FALSE(d.admit);
  EXPECT_THAT(d.wake_at, Eq(kT0 + milliseconds(10)));
  EXPECT_TRUE(decide_admission(o, {3, kT0, 0}, kT0 + milliseconds(10)).admit);
  // Continuous batching: enough to fill the free slots starts at once.
  EXPECT_TRUE(decide_admission(o, {1, kT0, 3}, kT0).admit);
  EXPECT_FALSE(decide_admission(o, {1, kT0, 2}, kT0).admit);
  // No free slot: nothing starts, and no timer (a step boundary re-checks).
  d = decide_admission(o, {5, kT0, 4}, kT0 + milliseconds(50));
  EXPECT_FALSE(d.admit);
  EXPECT_FALSE(d.wake_at);
}

TEST(BatchPolicy, AdaptiveOnlyDiffersWhenIdle) {
  SchedulerOptions o;
  o.policy = BatchPolicy::kAdaptive;
  EXPECT_TRUE(decide_admission(o, {1, kT0, 0}, kT0).admit);
  EXPECT_FALSE(decide_admission(o, {1, kT0, 1}, kT0).admit);
}

TEST(BatchPolicy, ZeroWindowNeverHolds) {
  SchedulerOptions o;
  o.batch_window = microseconds(0);
  EXPECT_TRUE(decide_admission(o, {1, kT0, 1}, kT0).admit);
}

TEST(Options, ParseAndValidate) {
  EXPECT_THAT(*parse_batch_policy("adaptive"), Eq(BatchPolicy::kAdaptive));
  EXPECT_THAT(*parse_batch_policy("window"), Eq(BatchPolicy::kWindow));
  EXPECT_FALSE(parse_batch_policy("greedy"));
  SchedulerOptions o;
  EXPECT_TRUE(validate(o));
  o.max_batch = 0;
  EXPECT_FALSE(validate(o));
}

TEST(Options, Flags) {
  SchedulerOptions o;
  CLI::App app;
  add_scheduler_flags(app, o);
  const char* argv[] = {"x",   "--max-batch",    "8",       "--batch-window-ms",
                        "2.5", "--batch-policy", "adaptive"};
  app.parse(7, const_cast<char**>(argv));
  EXPECT_THAT(o.max_batch, Eq(8));
  EXPECT_THAT(o.batch_window, Eq(microseconds(2500)));
  EXPECT_THAT(o.policy, Eq(BatchPolicy::kAdaptive));
  CLI::App bad;
  SchedulerOptions o2;
  add_scheduler_flags(bad, o2);
  const char* argv2[] = {"x", "--batch-policy", "fastest"};
  EXPECT_THROW(bad.parse(3, const_cast<char**>(argv2)), CLI::ValidationError);
}

TEST(StopMatcher, HoldsBackAPossiblePrefixAndReleasesItWhenItBreaks) {
  StopMatcher m({"STOP"});
  EXPECT_THAT(m.push("abc S").text, Eq("abc "));
  EXPECT_THAT(m.push("T").text, Eq(""));
  StopMatcher::Result r = m.push("x");
  EXPECT_THAT(r.text, Eq("STx"));
  EXPECT_FALSE(r.matched);
}

TEST(StopMatcher, MatchesAcrossPiecesAndDropsTheRest) {
  StopMatcher m({"STOP"});
  EXPECT_THAT(m.push("hello S").text, Eq("hello "));
  EXPECT_THAT(m.push("TO").text, Eq(""));
  StopMatcher::Result r = m.push("P and more");
  EXPECT_THAT(r.text, Eq(""));
  EXPECT_THAT(r.matched, Eq(std::optional<size_t>(0)));
  EXPECT_THAT(m.push("after").text, Eq(""));
  EXPECT_THAT(m.flush(), Eq(""));
}

TEST(StopMatcher, EarliestMatchWinsThenListOrder) {
  StopMatcher m({"world", "o w", "hello"});
  StopMatcher::Result r = m.push("say hello world");
  EXPECT_THAT(r.text, Eq("say "));
  EXPECT_THAT(m.stop_string(*r.matched), Eq("hello"));
  StopMatcher same_pos({"ab", "abc"});
  EXPECT_THAT(*same_pos.push("xabc").matched, Eq(0u));
}

TEST(StopMatcher, OverlappingPrefixesKeepTheLongestCandidate) {
  StopMatcher m({"aab"});
  EXPECT_THAT(m.push("xaa").text, Eq("x"));
  EXPECT_THAT(m.push("a").text, Eq("a"));  // "aaa": keep "aa"
  StopMatcher::Result r = m.push("b!");
  EXPECT_TRUE(r.matched);
  EXPECT_THAT(r.text, Eq(""));
}

TEST(StopMatcher, WithoutStopStringsEverythingPassesAndFlushReleases) {
  StopMatcher none({});
  EXPECT_THAT(none.push("abc").text, Eq("abc"));
  StopMatcher m({"xyz"});
  EXPECT_THAT(m.push("abcx").text, Eq("abc"));
  EXPECT_THAT(m.flush(), Eq("x"));
}

TEST(StopMatcher, MultiByteStopStrings) {
  StopMatcher m({"。終"});
  EXPECT_THAT(m.push("です。").text, Eq("です"));
  StopMatcher::Result r = m.push("終わり");
  EXPECT_TRUE(r.matched);
  EXPECT_THAT(r.text, Eq(""));
}

TEST(Percentile, NearestRank) {
  std::deque<microseconds> v;
  EXPECT_THAT(percentile(v, 0.5), Eq(microseconds(0)));
  for (int i = 100; i >= 1; --i) v.push_back(microseconds(i));
  EXPECT_THAT(percentile(v, 0.5), Eq(microseconds(50)));
  EXPECT_THAT(percentile(v, 0.99), Eq(microseconds(99)));
  EXPECT_THAT(percentile(v, 1.0), Eq(microseconds(100)));
  EXPECT_THAT(percentile(v, 0.0), Eq(microseconds(1)));
}

TEST(StatsRecorder, KeepsARecentWindowOfLatencies) {
  StatsRecorder r(4, 3, "x");
  for (int i : {1000, 1000, 1000, 1, 2, 3}) r.on_ttft(microseconds(i));
  EXPECT_THAT(r.snapshot().ttft_p99, Eq(microseconds(3)));
  // The Prometheus histogram counts everything since start, not the window.
  EXPECT_THAT(r.snapshot().ttft_histogram.count, Eq(6u));
  EXPECT_THAT(r.snapshot().ttft_histogram.bucket_counts[0], Eq(3u));  // <= 0.5 ms
  r.on_itl(microseconds(3000));
  EXPECT_THAT(r.snapshot().itl_histogram.count, Eq(1u));
  r.on_step(9, microseconds(10), 9);  // beyond max batch: last bucket
  EXPECT_THAT(r.snapshot().batch_size_histogram[4], Eq(1u));
}

}  // namespace
}  // namespace ringserve::serve
