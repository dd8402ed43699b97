// Batch formation, continuous batching, cancellation and KV admission on a
// virtual clock.
#include <gmock/gmock.h>

#include <optional>

#include "fixture.h"

namespace ringserve::serve::testing {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::Eq;

TEST_F(SchedulerTest, FourArrivalsStartABatchAtOnce) {
  make();
  for (uint64_t id = 1; id <= 4; ++id) submit(request(id));
  Scheduler::Progress p = sut_->run_once();
  EXPECT_THAT(p.admitted, Eq(4u));
  EXPECT_TRUE(p.stepped);
  ASSERT_THAT(engine_->steps().size(), Eq(1u));
  EXPECT_THAT(engine_->steps()[0], (std::set<engine::SeqId>{1, 2, 3, 4}));
  run_to_completion();
  EXPECT_THAT(sut_->stats().batch_size_histogram[4], Eq(4u));  // 4 tokens each, all together
}

TEST_F(SchedulerTest, ALoneArrivalStartsAfterExactlyTheWindow) {
  make();
  const Clock::time_point t0 = clock_->now();
  auto sink = submit(request(1));
  Scheduler::Progress p = sut_->run_once();
  EXPECT_THAT(p.admitted, Eq(0u));
  EXPECT_FALSE(p.stepped);
  ASSERT_TRUE(p.wake_at.has_value());
  EXPECT_THAT(*p.wake_at, Eq(t0 + milliseconds(10)));

  clock_->advance(milliseconds(10) - microseconds(1));
  p = sut_->run_once();
  EXPECT_THAT(p.admitted, Eq(0u));
  EXPECT_TRUE(engine_->steps().empty());

  clock_->advance(microseconds(1));
  p = sut_->run_once();
  EXPECT_THAT(p.admitted, Eq(1u));
  EXPECT_TRUE(p.stepped);
  run_to_completion();
  ASSERT_TRUE(sink->done());
  EXPECT_THAT(sink->done()->timings.queue, Eq(microseconds(10'000)));
}

TEST_F(SchedulerTest, BatchWindowIsConfigurable) {
  SchedulerOptions options;
  options.batch_window = milliseconds(25);
  make(options);
  const Clock::time_point t0 = clock_->now();
  submit(request(1));
  EXPECT_THAT(sut_->run_once().wake_at, Eq(t0 + milliseconds(25)));
}

TEST_F(SchedulerTest, ArrivalsDuringADecodeJoinAtTheNextStep) {
  make();
  submit(request(1, 8, 50));
  clock_->advance(milliseconds(10));
  ASSERT_TRUE(sut_->run_once().stepped);  // request 1 prefills alone
  sut_->run_once();                       // and decodes
  ASSERT_THAT(engine_->steps().back(), (std::set<engine::SeqId>{1}));

  // Three arrivals fill the three free slots: no window, they join the
  // very next step while request 1 keeps decoding.
  for (uint64_t id = 2; id <= 4; ++id) submit(request(id, 8, 50));
  Scheduler::Progress p = sut_->run_once();
  EXPECT_THAT(p.admitted, Eq(3u));
  EXPECT_THAT(engine_->steps().back(), (std::set<engine::SeqId>{1, 2, 3, 4}));
}

TEST_F(SchedulerTest, ALoneArrivalDuringADecodeJoinsAfterItsWindowWithoutWaitingForTheBatch) {
  make();
  submit(request(1, 8, 100));
  clock_->advance(milliseconds(10));
  sut_->run_once();
  const Clock::time_point arrival = clock_->now();
  submit(request(2, 8, 4));
  // Steps take 5 ms of virtual time: request 2 waits two steps (its window)
  // and joins the step that starts once the window has closed.
  size_t steps_before_join = 0;
  while (engine_->steps().back().count(2) == 0) {
    ASSERT_LT(steps_before_join, 10u);
    sut_->run_once();
    ++steps_before_join;
  }
  EXPECT_THAT(steps_before_join, Eq(3u));  // steps at +0, +5 ms alone; joins at +10 ms
  EXPECT_THAT(engine_->steps().back(), (std::set<engine::SeqId>{1, 2}));
  EXPECT_GE(clock_->now() - arrival, milliseconds(10));
}

TEST_F(SchedulerTest, RunningSequencesNeverExceedMaxBatch) {
  SchedulerOptions options;
  options.max_batch = 3;
  make(options);
  for (uint64_t id = 1; id <= 7; ++id) submit(request(id, 4, 3));
  run_to_completion();
  for (const auto& step : engine_->steps()) EXPECT_LE(step.size(), 3u);
  EXPECT_THAT(sut_->stats().batch_size_histogram.size(), Eq(4u));
}

TEST_F(SchedulerTest, AdaptivePolicyAdmitsALoneRequestAtOnceWhenIdle) {
  SchedulerOptions options;
  options.policy = BatchPolicy::kAdaptive;
  make(options);
  auto sink = submit(request(1));
  Scheduler::Progress p = sut_->run_once();
  EXPECT_THAT(p.admitted, Eq(1u));
  EXPECT_TRUE(p.stepped);
  run_to_completion();
  EXPECT_THAT(sink->done()->timings.queue, Eq(microseconds(0)));
}

TEST_F(SchedulerTest, AdaptivePolicyStillHoldsALoneArrivalWhileTheEngineIsBusy) {
  SchedulerOptions options;
  options.policy = BatchPolicy::kAdaptive;
  make(options);
  submit(request(1, 8, 100));
  sut_->run_once();
  submit(request(2));
  Scheduler::Progress p = sut_->run_once();  // engine busy: request 2 waits its window
  EXPECT_THAT(p.admitted, Eq(0u));
  EXPECT_THAT(engine_->steps().back(), (std::set<engine::SeqId>{1}));
}

TEST_F(SchedulerTest, CancellingARunningRequestFreesItsSequenceWithinOneStep) {
  make();
  for (uint64_t id = 1; id <= 4; ++id) submit(request(id, 8, 100));
  sut_->run_once();
  submit(request(9, 8, 100));  // waiting (no free slot)
  sut_->cancel(2);
  sut_->run_once();
  EXPECT_THAT(engine_->released(), ElementsAre(2u));
  EXPECT_THAT(engine_->steps().back().count(2), Eq(0u));
  // The freed slot went to the waiting request at the same step boundary.
  EXPECT_THAT(engine_->steps().back().count(9), Eq(1u));
}

// Reads the Stats at the moment its Done is sent: what a client that asks
// for Stats right after its Done sees.
class StatsAtDoneSink final : public RequestSink {
 public:
  explicit StatsAtDoneSink(const Scheduler& scheduler) : scheduler_(scheduler) {}
  void on_tokens(TokenDelta) override {}
  void on_done(Completion) override { at_done_ = scheduler_.stats(); }
  const std::optional<StatsSnapshot>& at_done() const { return at_done_; }

 private:
  const Scheduler& scheduler_;
  std::optional<StatsSnapshot> at_done_;
};

TEST_F(SchedulerTest, StatsNoLongerCountAFinishedOrCancelledRequestOrItsKvByItsDone) {
  make();
  auto finishing = std::make_shared<StatsAtDoneSink>(*sut_);
  auto cancelled = std::make_shared<StatsAtDoneSink>(*sut_);
  ASSERT_TRUE(sut_->submit(request(1, 8, 3), finishing));    // 1 block of 16 tokens
  ASSERT_TRUE(sut_->submit(request(2, 8, 100), cancelled));  // 7 blocks
  EXPECT_THAT(sut_->stats().kv.blocks_total, Eq(1024)) << "known before the first step";
  clock_->advance(milliseconds(10));
  sut_->run_once();
  EXPECT_THAT(sut_->stats().kv.blocks_used, Eq(8));
  while (!finishing->at_done()) sut_->run_once();
  EXPECT_THAT(finishing->at_done()->requests_active, Eq(1u));
  EXPECT_THAT(finishing->at_done()->kv.blocks_used, Eq(7));

  sut_->cancel(2);
  Scheduler::Progress p = sut_->run_once();
  EXPECT_FALSE(p.stepped) << "nothing left to run: the KV must be freed without a step";
  ASSERT_TRUE(cancelled->at_done());
  EXPECT_THAT(cancelled->at_done()->requests_active, Eq(0u));
  EXPECT_THAT(cancelled->at_done()->kv.blocks_used, Eq(0));
  EXPECT_THAT(sut_->stats().kv.blocks_used, Eq(0));
}

TEST_F(SchedulerTest, CancelledRequestsGetDoneCancelledExactlyOnce) {
  make();
  auto running = submit(request(1, 8, 100));
  sut_->run_once();
  clock_->advance(milliseconds(10));
  sut_->run_once();
  auto waiting = submit(request(2, 8, 100));
  sut_->cancel(1);
  sut_->cancel(2);
  sut_->cancel(12345);  // unknown: ignored
  sut_->run_once();
  ASSERT_TRUE(running->done());
  ASSERT_TRUE(waiting->done());
  EXPECT_THAT(running->done()->reason, Eq(FinishReason::kCancelled));
  EXPECT_THAT(waiting->done()->reason, Eq(FinishReason::kCancelled));
  EXPECT_THAT(waiting->done()->completion_tokens, Eq(0));
  EXPECT_THAT(sut_->outstanding(), Eq(0u));
  EXPECT_THAT(engine_->active_sequences(), Eq(0u));
  sut_->cancel(1);  // already finished: ignored
  sut_->run_once();
  EXPECT_THAT(running->events_after_done(), Eq(0));
}

TEST_F(SchedulerTest, ContinuousArrivalsAreAdmittedInArrivalOrderAndNoneStarves) {
  SchedulerOptions options;
  options.max_batch = 2;
  make(options);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  uint64_t next = 1;
  // Two new requests arrive every step, faster than two slots can serve.
  for (int i = 0; i < 40; ++i) {
    sinks.push_back(submit(request(next++, 4, 3)));
    sinks.push_back(submit(request(next++, 4, 3)));
    sut_->run_once();
  }
  run_to_completion();
  std::vector<engine::SeqId> expected;
  for (uint64_t id = 1; id < next; ++id) expected.push_back(id);
  EXPECT_THAT(engine_->added_order(), Eq(expected));
  for (const auto& sink : sinks) {
    ASSERT_TRUE(sink->done());
    EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kLength));
  }
}

TEST_F(SchedulerTest, ARequestThatDoesNotFitTheKvCacheYetWaitsAndIsAdmittedAfterARelease) {
  ScriptedEngineOptions engine_options;
  engine_options.kv_blocks = 4;  // 64 tokens
  make({}, engine_options);
  auto big = submit(request(1, 30, 10));     // 40 tokens: 3 blocks
  auto second = submit(request(2, 20, 10));  // 30 tokens: 2 blocks, fits only after 1 ends
  auto small = submit(request(3, 4, 4));     // fits now, but waits behind 2 (FIFO)
  clock_->advance(milliseconds(10));
  Scheduler::Progress p = sut_->run_once();
  EXPECT_THAT(p.admitted, Eq(1u));
  EXPECT_THAT(engine_->steps().back(), (std::set<engine::SeqId>{1}));
  while (!big->done()) {
    EXPECT_FALSE(second->done());
    EXPECT_THAT(engine_->steps().back(), (std::set<engine::SeqId>{1}));
    sut_->run_once();
  }
  sut_->run_once();
  EXPECT_THAT(engine_->steps().back().count(2), Eq(1u));
  run_to_completion();
  EXPECT_THAT(second->done()->reason, Eq(FinishReason::kLength));
  EXPECT_THAT(small->done()->reason, Eq(FinishReason::kLength));
  EXPECT_THAT(engine_->added_order(), ElementsAre(1u, 2u, 3u));
}

TEST_F(SchedulerTest, ARequestThatCanNeverFitIsRejectedRightAway) {
  ScriptedEngineOptions engine_options;
  engine_options.kv_blocks = 2;
  make({}, engine_options);
  auto sink = submit(request(1, 40, 10));  // 3 blocks > 2
  sut_->run_once();                        // no window wait for a rejection
  ASSERT_TRUE(sink->done());
  EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kError));
  EXPECT_THAT(sink->done()->error.code, Eq(Errc::kTooLarge));
  EXPECT_THAT(sink->done()->error.message, ::testing::HasSubstr("never fit"));
  EXPECT_TRUE(sink->deltas().empty());
  EXPECT_TRUE(engine_->added_order().empty());
}

TEST_F(SchedulerTest, AFailedEngineStepFailsEveryRunningRequestAndFreesThem) {
  make();
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (uint64_t id = 1; id <= 4; ++id) sinks.push_back(submit(request(id, 8, 10)));
  sut_->run_once();
  engine_->fail_next_step();
  sut_->run_once();
  for (const auto& sink : sinks) {
    ASSERT_TRUE(sink->done());
    EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kError));
    EXPECT_THAT(sink->done()->error.message, ::testing::HasSubstr("scripted step failure"));
  }
  EXPECT_THAT(engine_->active_sequences(), Eq(0u));
  // The scheduler keeps serving.
  auto next = submit(request(5));
  run_to_completion();
  EXPECT_THAT(next->done()->reason, Eq(FinishReason::kLength));
}

}  // namespace
}  // namespace ringserve::serve::testing
