// What a request gets back: stop conditions, streaming, logprobs, timings.
#include <gmock/gmock.h>

#include "fixture.h"
#include "support/test_support.h"

namespace ringserve::serve::testing {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;

TEST_F(SchedulerTest, MaxNewTokensFinishesWithLength) {
  make();
  auto sink = submit(request(1, 8, 5));
  run_to_completion();
  EXPECT_THAT(sink->tokens(), ElementsAre(100, 101, 102, 103, 104));
  EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kLength));
  EXPECT_THAT(sink->done()->completion_tokens, Eq(5));
  EXPECT_THAT(sink->done()->prompt_tokens, Eq(8));
  EXPECT_THAT(sink->events_after_done(), Eq(0));
}

TEST_F(SchedulerTest, EosStopsUnlessIgnored) {
  make();
  engine_->script(1, {50, 51, 2, 52});
  engine_->script(2, {50, 51, 2, 52});
  auto stops = submit(request(1, 8, 10));
  Request r = request(2, 8, 4);
  r.stop.ignore_eos = true;
  auto ignores = submit(std::move(r));
  run_to_completion();
  EXPECT_THAT(stops->tokens(), ElementsAre(50, 51));  // the eos itself is not output
  EXPECT_THAT(stops->done()->reason, Eq(FinishReason::kStop));
  EXPECT_THAT(stops->done()->completion_tokens, Eq(2));
  EXPECT_THAT(ignores->tokens(), ElementsAre(50, 51, 2, 52));
  EXPECT_THAT(ignores->done()->reason, Eq(FinishReason::kLength));
}

TEST_F(SchedulerTest, StopTokenIdsStop) {
  make();
  engine_->script(1, {50, 51, 77, 52});
  Request r = request(1, 8, 10);
  r.stop.stop_token_ids = {77};
  auto sink = submit(std::move(r));
  run_to_completion();
  EXPECT_THAT(sink->tokens(), ElementsAre(50, 51));
  EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kStop));
}

TEST_F(SchedulerTest, StreamingSendsOneDeltaPerStep) {
  make();
  auto sink = submit(request(1, 8, 3));
  run_to_completion();
  auto deltas = sink->deltas();
  ASSERT_THAT(deltas.size(), Eq(3u));
  for (const auto& d : deltas) {
    EXPECT_THAT(d.id, Eq(1u));
    EXPECT_THAT(d.tokens.size(), Eq(1u));
  }
}

TEST_F(SchedulerTest, NonStreamingSendsOneDeltaBeforeDone) {
  make();
  Request r = request(1, 8, 6);
  r.stream = false;
  auto sink = submit(std::move(r));
  run_to_completion();
  auto deltas = sink->deltas();
  ASSERT_THAT(deltas.size(), Eq(1u));
  EXPECT_THAT(deltas[0].tokens, ElementsAre(100, 101, 102, 103, 104, 105));
  EXPECT_TRUE(sink->done());
}

TEST_F(SchedulerTest, LogprobsPassThroughWhenAsked) {
  make();
  Request r = request(1, 8, 2);
  r.sampling.top_logprobs = 3;
  auto asked = submit(std::move(r));
  auto not_asked = submit(request(2, 8, 2));
  run_to_completion();
  auto deltas = asked->deltas();
  ASSERT_THAT(deltas.size(), Eq(2u));
  ASSERT_THAT(deltas[1].logprobs.size(), Eq(1u));
  EXPECT_THAT(deltas[1].logprobs[0].token, Eq(101));
  EXPECT_FLOAT_EQ(deltas[1].logprobs[0].logprob, -1.0f);
  EXPECT_THAT(deltas[1].logprobs[0].top.size(), Eq(3u));
  for (const auto& d : not_asked->deltas()) EXPECT_THAT(d.logprobs, IsEmpty());
}

TEST_F(SchedulerTest, TimingsFollowTheVirtualClock) {
  ScriptedEngineOptions engine_options;
  engine_options.step_cost = microseconds(4000);
  make({}, engine_options);
  auto sink = submit(request(1, 8, 4));
  clock_->advance(milliseconds(10));  // the window
  run_to_completion();
  const Timings& t = sink->done()->timings;
  EXPECT_THAT(t.queue, Eq(microseconds(10'000)));
  EXPECT_THAT(t.prefill, Eq(microseconds(4'000)));
  EXPECT_THAT(t.first_token, Eq(microseconds(14'000)));
  EXPECT_THAT(t.mean_itl, Eq(microseconds(4'000)));
  EXPECT_THAT(t.max_itl, Eq(microseconds(4'000)));
  EXPECT_THAT(t.total, Eq(microseconds(26'000)));

  StatsSnapshot s = sut_->stats();
  EXPECT_THAT(s.requests_total, Eq(1u));
  EXPECT_THAT(s.completion_tokens_total, Eq(4u));
  EXPECT_THAT(s.prompt_tokens_total, Eq(8u));
  EXPECT_THAT(s.steps_total, Eq(4u));
  EXPECT_THAT(s.batch_size_histogram[1], Eq(4u));
  EXPECT_THAT(s.mean_step, Eq(microseconds(4'000)));
  EXPECT_THAT(s.ttft_p50, Eq(microseconds(14'000)));
  EXPECT_THAT(s.itl_p99, Eq(microseconds(4'000)));
  EXPECT_THAT(s.queue_depth, Eq(0u));
  EXPECT_THAT(s.requests_active, Eq(0u));
  EXPECT_THAT(s.engine, Eq("scripted"));
}

TEST_F(SchedulerTest, StatsCountQueueDepthAndActiveRequests) {
  SchedulerOptions options;
  options.max_batch = 2;
  make(options);
  for (uint64_t id = 1; id <= 5; ++id) submit(request(id, 8, 50));
  EXPECT_THAT(sut_->stats().queue_depth, Eq(5u));
  sut_->run_once();
  StatsSnapshot s = sut_->stats();
  EXPECT_THAT(s.queue_depth, Eq(3u));
  EXPECT_THAT(s.requests_active, Eq(2u));
  EXPECT_THAT(s.kv.blocks_used, Eq(2 * 4));  // (8 + 50) tokens -> 4 blocks each
}

// Stop strings over a real tokenizer: the stop string spans several tokens,
// the text before it is emitted, the rest withheld.
class StopStringTest : public SchedulerTest {
 protected:
  void SetUp() override {
    auto loaded = tokenizer::Tokenizer::load(
        fixture_path("tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz"));
    ASSERT_TRUE(loaded) << loaded.error().to_string();
    tok_ = std::move(loaded).value();
    ScriptedEngineOptions engine_options;
    engine_options.vocab_size = tok_->vocab_size();
    engine_options.eos = {*tok_->token_to_id("<｜end▁of▁sentence｜>")};
    make({}, engine_options, tok_);
  }
  std::shared_ptr<RecordingSink> generate(const std::string& text, std::vector<std::string> stops,
                                          int max_new = 64) {
    Request r = request(next_id_, 4, max_new);
    r.stop.stop_strings = std::move(stops);
    engine_->script(next_id_, tok_->encode(text, false));
    ++next_id_;
    return submit(std::move(r));
  }
  static std::filesystem::path fixture_path(const std::string& p) {
    return ringserve::testing::fixture_path(p);
  }
  static inline std::shared_ptr<const tokenizer::Tokenizer> shared_;
  std::shared_ptr<const tokenizer::Tokenizer> tok_;
  uint64_t next_id_ = 1;
};

TEST_F(StopStringTest, AStopStringAcrossTokenBoundariesStopsAndWithholdsTheRest) {
  const std::string stop = "<<END-OF-ANSWER>>";
  ASSERT_GT(tok_->encode(stop, false).size(), 2u);  // really spans tokens
  auto sink = generate("The answer is 42." + stop + " trailing text", {stop});
  run_to_completion();
  EXPECT_THAT(sink->text(), Eq("The answer is 42."));
  EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kStop));
  EXPECT_THAT(sink->done()->stop_string, Eq(stop));
  // Streamed pieces never contained the beginning of the stop string.
  for (const auto& d : sink->deltas()) EXPECT_THAT(d.text.find('<'), Eq(std::string::npos));
}

TEST_F(StopStringTest, ReportsWhichStopStringMatchedFirst) {
  auto sink = generate("alpha beta gamma delta", {"delta", "beta g"});
  run_to_completion();
  EXPECT_THAT(sink->text(), Eq("alpha "));
  EXPECT_THAT(sink->done()->stop_string, Eq("beta g"));
}

TEST_F(StopStringTest, APartialMatchThatDoesNotCompleteIsReleased) {
  auto sink = generate("ab<<END nope", {"<<END-OF-ANSWER>>"}, 5);
  run_to_completion();
  const std::vector<int32_t> ids = tok_->encode("ab<<END nope", false);
  ASSERT_GE(ids.size(), 5u);
  const std::vector<int32_t> first5(ids.begin(), ids.begin() + 5);
  EXPECT_THAT(sink->text(), Eq(tok_->decode(first5)));
  EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kLength));
  EXPECT_THAT(sink->done()->stop_string, IsEmpty());
}

TEST_F(StopStringTest, MultiByteTextStreamsAsCompleteUtf8AndTheEosTextIsNotEmitted) {
  const std::string text = "温度は25°C、晴れ☀️です";
  std::vector<int32_t> ids = tok_->encode(text, false);
  ids.push_back(engine_->info().eos_token_ids[0]);
  engine_->script(next_id_, ids);
  auto sink = submit(request(next_id_++, 4, 64));
  run_to_completion();
  EXPECT_THAT(sink->text(), Eq(text));
  EXPECT_THAT(sink->done()->reason, Eq(FinishReason::kStop));
}

}  // namespace
}  // namespace ringserve::serve::testing
