// Validation at submit, draining, shutdown, and the real engine thread.
#include <gmock/gmock.h>

#include <thread>

#include "fixture.h"

namespace ringserve::serve::testing {
namespace {

using std::chrono::milliseconds;
using ::testing::Eq;
using ::testing::HasSubstr;

class SubmitErrorTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerOptions options;
    options.max_queue = 3;
    make(options);
  }
  Error rejected(Request r) {
    Status s = sut_->submit(std::move(r), std::make_shared<RecordingSink>());
    EXPECT_FALSE(s);
    return s ? Error{} : s.error();
  }
};

TEST_F(SubmitErrorTest, EmptyPrompt) {
  Request r = request(1);
  r.prompt.clear();
  EXPECT_THAT(rejected(r).code, Eq(Errc::kInvalidArgument));
}

TEST_F(SubmitErrorTest, IdsOutsideTheVocabulary) {
  Request r = request(1);
  r.prompt[3] = 1000;  // vocab 1000
  Error e = rejected(r);
  EXPECT_THAT(e.code, Eq(Errc::kInvalidArgument));
  EXPECT_THAT(e.message, HasSubstr("position 3"));
  r.prompt[3] = -1;
  EXPECT_THAT(rejected(r).code, Eq(Errc::kInvalidArgument));
}

TEST_F(SubmitErrorTest, TooLongForTheContext) {
  Error e = rejected(request(1, 500, 13));  // max_context 512
  EXPECT_THAT(e.code, Eq(Errc::kTooLarge));
  EXPECT_THAT(e.message, HasSubstr("512"));
}

TEST_F(SubmitErrorTest, BadLimitsAndStopCriteria) {
  EXPECT_THAT(rejected(request(1, 8, 0)).code, Eq(Errc::kInvalidArgument));
  Request r = request(1);
  r.stop.stop_strings = {""};
  EXPECT_THAT(rejected(r).code, Eq(Errc::kInvalidArgument));
  r.stop.stop_strings.assign(17, "x");
  EXPECT_THAT(rejected(r).code, Eq(Errc::kInvalidArgument));
  r.stop.stop_strings = {std::string(257, 'x')};
  EXPECT_THAT(rejected(r).code, Eq(Errc::kInvalidArgument));
  r = request(1);
  r.stop.stop_token_ids = {5000};
  EXPECT_THAT(rejected(r).code, Eq(Errc::kInvalidArgument));
  r = request(1);
  r.sampling.top_logprobs = 21;
  EXPECT_THAT(rejected(r).code, Eq(Errc::kInvalidArgument));
  r = request(1);
  r.sampling.temperature = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(rejected(r).code, Eq(Errc::kInvalidArgument));
}

TEST_F(SubmitErrorTest, DuplicateIdsAndAFullQueue) {
  submit(request(1));
  EXPECT_THAT(rejected(request(1)).message, HasSubstr("already in flight"));
  submit(request(2));
  submit(request(3));
  EXPECT_THAT(rejected(request(4)).code, Eq(Errc::kResourceExhausted));
  run_to_completion();
  submit(request(1));  // finished ids may be reused
}

TEST_F(SubmitErrorTest, NoSink) {
  EXPECT_FALSE(sut_->submit(request(1), nullptr));
}

TEST_F(SchedulerTest, DrainingRefusesNewRequestsAndFinishesQueuedAndRunningOnes) {
  make();
  auto running = submit(request(1, 8, 6));
  clock_->advance(milliseconds(10));
  sut_->run_once();
  auto queued = submit(request(2, 8, 3));
  sut_->begin_drain();
  Status refused = sut_->submit(request(3), std::make_shared<RecordingSink>());
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().code, Eq(Errc::kUnavailable));
  run_to_completion();
  EXPECT_THAT(running->done()->reason, Eq(FinishReason::kLength));
  EXPECT_THAT(queued->done()->reason, Eq(FinishReason::kLength));
  EXPECT_TRUE(sut_->wait_idle(milliseconds(0)));
}

TEST_F(SchedulerTest, CancelAllEndsEveryRequestWithCancelled) {
  make();
  auto a = submit(request(1, 8, 100));
  auto b = submit(request(2, 8, 100));
  clock_->advance(milliseconds(10));
  sut_->run_once();
  auto c = submit(request(3, 8, 100));
  sut_->cancel_all();
  sut_->run_once();
  for (const auto& sink : {a, b, c})
    EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kCancelled));
  EXPECT_THAT(engine_->active_sequences(), Eq(0u));
  EXPECT_THAT(engine_->kv_usage().blocks_used, Eq(0));
}

TEST_F(SchedulerTest, StopCancelsWhateverIsLeft) {
  make();
  auto a = submit(request(1, 8, 100));
  sut_->run_once();
  auto b = submit(request(2, 8, 100));  // still in the inbox
  sut_->stop();
  EXPECT_THAT(a->done()->reason, Eq(FinishReason::kCancelled));
  EXPECT_THAT(b->done()->reason, Eq(FinishReason::kCancelled));
  EXPECT_FALSE(sut_->submit(request(3), std::make_shared<RecordingSink>()));
}

// The real engine thread on the steady clock: many submitting threads, each
// request gets its tokens and exactly one Done, and batches form.
TEST(SchedulerThreadTest, ManySubmittersOnTheEngineThread) {
  ScriptedEngineOptions engine_options;
  engine_options.step_cost = std::chrono::microseconds(0);
  auto engine = std::make_unique<ScriptedEngine>(engine_options, nullptr);
  SchedulerOptions options;
  options.batch_window = milliseconds(2);
  auto created = Scheduler::create(std::move(engine), options);
  ASSERT_TRUE(created);
  std::unique_ptr<Scheduler> sut = std::move(created).value();
  sut->start();

  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  std::vector<std::shared_ptr<RecordingSink>> sinks(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int index = t * kPerThread + i;
        Request r;
        r.id = static_cast<uint64_t>(index + 1);
        r.log_id = "thread:" + std::to_string(index);
        r.prompt = {1, 2, 3};
        r.stop.max_new_tokens = 5;
        sinks[static_cast<size_t>(index)] = std::make_shared<RecordingSink>();
        Status s = sut->submit(std::move(r), sinks[static_cast<size_t>(index)]);
        ASSERT_TRUE(s) << s.error().to_string();
        if (i % 5 == 4) sut->cancel(static_cast<uint64_t>(index + 1));
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(sut->wait_idle(milliseconds(30'000)));
  for (const auto& sink : sinks) {
    ASSERT_TRUE(sink->done());
    EXPECT_THAT(sink->events_after_done(), Eq(0));
    if (sink->done()->reason == FinishReason::kLength) {
      EXPECT_THAT(sink->tokens().size(), Eq(5u));
    } else {
      EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kCancelled));
    }
  }
  StatsSnapshot s = sut->stats();
  EXPECT_THAT(s.requests_total, Eq(100u));
  uint64_t batched_steps = 0;
  for (size_t b = 2; b < s.batch_size_histogram.size(); ++b)
    batched_steps += s.batch_size_histogram[b];
  EXPECT_GT(batched_steps, 0u);
  sut->stop();
}

TEST(SchedulerThreadTest, ALoneRequestIsServedAfterTheWindowWithoutOtherTraffic) {
  auto engine = std::make_unique<ScriptedEngine>(ScriptedEngineOptions{}, nullptr);
  SchedulerOptions options;
  options.batch_window = milliseconds(20);
  auto sut = std::move(Scheduler::create(std::move(engine), options)).value();
  sut->start();
  Request r;
  r.id = 7;
  r.prompt = {1, 2};
  r.stop.max_new_tokens = 3;
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_TRUE(sut->submit(std::move(r), sink));
  ASSERT_TRUE(sut->wait_idle(milliseconds(30'000)));
  EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kLength));
  // A lower bound only: the engine thread slept through the window.
  EXPECT_GE(sink->done()->timings.queue, milliseconds(20));
}

}  // namespace
}  // namespace ringserve::serve::testing
