// ringctl's reasoning view and ringbench's statistics, on their own.
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>

#include "compare.h"
#include "reasoning_view.h"
#include "results.h"
#include "workload.h"

namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Lt;
using ::testing::Ne;
using ::testing::Not;

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
  // No server timings on one side (another server): no number, no ratio.
  a.summary.queue_ms = ringbench::distribution({2.0});
  b.summary.queue_ms = ringbench::Distribution{};
  const std::string untimed =
      ringbench::format_comparison(ringbench::report_json(a), ringbench::report_json(b), "a", "b");
  EXPECT_THAT(untimed, HasSubstr("queue p50 (ms)                  2.00               -         -"));
}

TEST(RingbenchWorkload, IdRangeSkipsSpecialIds) {
  EXPECT_THAT(ringbench::token_id_range(1024).low, Eq(3));
  EXPECT_THAT(ringbench::token_id_range(1024).high, Eq(1024));
  EXPECT_THAT(ringbench::token_id_range(32000).low, Eq(1000));
  EXPECT_THAT(ringbench::token_id_range(32000).high, Eq(32000));
  EXPECT_THAT(ringbench::token_id_range(151936).high, Eq(150000));
  EXPECT_TRUE(ringbench::token_id_range(3).empty());
  EXPECT_TRUE(ringbench::token_id_range(-5).empty());
}

TEST(RingbenchOpenAi, ModelFactsFromTheServersModelLists) {
  // ringserve / vLLM: max_model_len.
  auto ours = ringbench::parse_models(
      R"({"object":"list","data":[{"id":"tiny","object":"model","max_model_len":512}]})");
  ASSERT_TRUE(ours);
  EXPECT_THAT(ours->id, Eq("tiny"));
  EXPECT_THAT(ours->max_context, Eq(512));
  EXPECT_FALSE(ours->vocab_size);
  // llama.cpp: meta.n_vocab.
  auto llama = ringbench::parse_models(
      R"({"data":[{"id":"m.gguf","meta":{"n_vocab":151936,"n_ctx_train":32768}}]})");
  ASSERT_TRUE(llama);
  EXPECT_THAT(llama->vocab_size, Eq(151936));
  EXPECT_FALSE(llama->max_context);
  auto explicit_vocab = ringbench::parse_models(R"({"data":[{"id":"a","vocab_size":1024}]})");
  ASSERT_TRUE(explicit_vocab);
  EXPECT_THAT(explicit_vocab->vocab_size, Eq(1024));
  for (const char* bad : {"", "not json", "[]", R"({"data":[]})", R"({"data":[{"id":""}]})",
                          R"({"data":[{"object":"model"}]})"}) {
    EXPECT_FALSE(ringbench::parse_models(bad)) << bad;
  }
}

TEST(RingbenchOpenAi, RequestBodyNamesTheModelOnlyWhenKnown) {
  ringbench::Config config;
  config.output_len = 8;
  const auto ours =
      nlohmann::json::parse(ringbench::completion_request_body({5, 6}, config, 1, ""));
  EXPECT_THAT(ours["prompt"], Eq(nlohmann::json({5, 6})));
  EXPECT_THAT(ours["max_tokens"], Eq(8));
  EXPECT_THAT(ours["temperature"], Eq(0));
  EXPECT_FALSE(ours.contains("seed"));  // greedy: nothing to seed
  EXPECT_FALSE(ours.contains("top_p"));
  EXPECT_THAT(ours["ignore_eos"], Eq(true));
  EXPECT_THAT(ours["stream"], Eq(true));
  EXPECT_THAT(ours["return_token_ids"], Eq(true));
  EXPECT_FALSE(ours.contains("model"));
  EXPECT_FALSE(ours.contains("stream_options"));
  config.output_len = 3;
  const auto any =
      nlohmann::json::parse(ringbench::completion_request_body({5}, config, 1, "llama"));
  EXPECT_THAT(any["model"], Eq("llama"));
  EXPECT_THAT(any["max_tokens"], Eq(3));
  EXPECT_THAT(any["stream_options"]["include_usage"], Eq(true));
  EXPECT_THAT(any["ignore_eos"], Eq(true));
}

TEST(RingbenchOpenAi, SampledRequestsCarryTheirSettingsAndASeedEach) {
  ringbench::Config config;
  config.temperature = 0.6f;
  config.top_p = 0.95f;
  config.top_k = 40;
  config.seed = 7;
  const auto a = nlohmann::json::parse(
      ringbench::completion_request_body({5}, config, config.request_seed(0), ""));
  const auto b = nlohmann::json::parse(
      ringbench::completion_request_body({5}, config, config.request_seed(1), ""));
  EXPECT_THAT(a["temperature"].get<double>(), DoubleNear(0.6, 1e-6));
  EXPECT_THAT(a["top_p"].get<double>(), DoubleNear(0.95, 1e-6));
  EXPECT_THAT(a["top_k"], Eq(40));
  EXPECT_THAT(a["seed"], Ne(b["seed"]));
  // Signed 64-bit, as OpenAI-compatible servers read it.
  EXPECT_THAT(a["seed"].get<uint64_t>(), Lt(uint64_t{1} << 63));
  EXPECT_THAT(config.request_seed(3), Eq(config.request_seed(3)));
  ringbench::Config other = config;
  other.seed = 8;
  EXPECT_THAT(other.request_seed(0), Ne(config.request_seed(0)));
  EXPECT_THAT(config.describe(), HasSubstr("temperature 0.6, top-k 40, top-p 0.95"));
  EXPECT_THAT(ringbench::to_json(config)["sampling"]["top_k"], Eq(40));
  EXPECT_THAT(ringbench::Config{}.describe(), HasSubstr("greedy"));
}

// The digest: of the ids in order, folded over the requests in order, and
// only where every request's ids came back.
TEST(RingbenchDigest, TellsRunsWithDifferentTokensApart) {
  const std::vector<int32_t> ids = {1, 2, 300000, -1};
  const uint64_t whole = ringbench::digest_tokens(ringbench::kTokenDigestSeed, ids);
  const uint64_t pieces = ringbench::digest_tokens(
      ringbench::digest_tokens(ringbench::kTokenDigestSeed, std::span(ids).first(1)),
      std::span(ids).subspan(1));
  EXPECT_THAT(pieces, Eq(whole));  // streamed in events of any size
  const std::vector<int32_t> swapped = {2, 1, 300000, -1};
  EXPECT_THAT(ringbench::digest_tokens(ringbench::kTokenDigestSeed, swapped), Ne(whole));

  ringbench::RequestRecord a, b;
  a.ok = b.ok = true;
  a.token_digest = whole;
  b.token_digest = ringbench::digest_tokens(ringbench::kTokenDigestSeed, swapped);
  const auto ab = ringbench::summarize({a, b}, 1.0).token_digest;
  EXPECT_THAT(ab.size(), Eq(16u));
  EXPECT_THAT(ringbench::summarize({a, b}, 1.0).token_digest, Eq(ab));
  EXPECT_THAT(ringbench::summarize({b, a}, 1.0).token_digest, Ne(ab));
  ringbench::RequestRecord counted_by_usage = a;
  counted_by_usage.token_count = ringbench::TokenCount::kUsage;
  EXPECT_THAT(ringbench::summarize({a, counted_by_usage}, 1.0).token_digest, Eq(""));
  ringbench::RequestRecord failed;
  EXPECT_THAT(ringbench::summarize({a, failed}, 1.0).token_digest, Eq(""));
  EXPECT_THAT(ringbench::to_json(ringbench::summarize({a, b}, 1.0))["token_digest"], Eq(ab));
}

// Feeds a whole SSE stream (in awkward pieces) and finishes it.
ringbench::RequestRecord read_stream(const std::string& sse, int expected) {
  ringbench::RequestRecord record;
  const auto t0 = std::chrono::steady_clock::now();
  ringbench::CompletionStreamReader reader(record, t0);
  for (size_t i = 0; i < sse.size(); i += 7) {
    reader.feed(std::string_view(sse).substr(i, 7), t0 + std::chrono::milliseconds(i));
  }
  reader.finish(expected);
  return record;
}

TEST(RingbenchOpenAi, CountsTokenIdsAndReadsRingserveTimings) {
  const std::string sse =
      "data: {\"choices\":[{\"text\":\"a\",\"token_ids\":[1,2]}]}\n\n"
      "data: {\"choices\":[{\"text\":\"\",\"token_ids\":[3]}]}\n\n"
      "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],"
      "\"timings\":{\"queue_ms\":1,\"prefill_ms\":2,\"first_token_ms\":3,\"total_ms\":9}}\n\n"
      "data: [DONE]\n\n";
  ringbench::RequestRecord r = read_stream(sse, 3);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_THAT(r.output_tokens, Eq(3));
  EXPECT_THAT(r.token_count, Eq(ringbench::TokenCount::kTokenIds));
  EXPECT_THAT(r.itl_ms.size(), Eq(2u));
  const std::vector<int32_t> ids = {1, 2, 3};
  EXPECT_THAT(r.token_digest, Eq(ringbench::digest_tokens(ringbench::kTokenDigestSeed, ids)));
  EXPECT_TRUE(r.has_server_timings);
  EXPECT_DOUBLE_EQ(r.server_total_ms, 9);
  EXPECT_FALSE(read_stream(sse, 4).ok);  // exact lengths are checked
}

TEST(RingbenchOpenAi, UsageCountsWhenThereAreNoIdsAndForeignTimingsAreIgnored) {
  // CRLF line ends, as some servers send; llama.cpp-style timings.
  const std::string sse =
      "data: {\"choices\":[{\"text\":\"ab\"}]}\r\n\r\n"
      "data: {\"choices\":[{\"text\":\"c\",\"finish_reason\":\"length\"}],"
      "\"timings\":{\"prompt_ms\":4,\"predicted_ms\":8}}\r\n\r\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\r\n\r\n"
      "data: [DONE]\r\n\r\n";
  ringbench::RequestRecord r = read_stream(sse, 3);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_THAT(r.token_count, Eq(ringbench::TokenCount::kUsage));
  EXPECT_THAT(r.output_tokens, Eq(3));
  EXPECT_FALSE(r.has_server_timings);
}

TEST(RingbenchOpenAi, ChunksCountWithNeitherAndEarlyStopsFail) {
  const std::string sse =
      ": keep-alive\n\n"
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
      "data: {\"choices\":[{\"text\":\"b\"}]}\n\n"
      "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n"
      "data: [DONE]\n\n";
  ringbench::RequestRecord r = read_stream(sse, 3);  // approximate: not held to the length
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_THAT(r.token_count, Eq(ringbench::TokenCount::kChunks));
  EXPECT_THAT(r.output_tokens, Eq(2));

  ringbench::RequestRecord stopped = read_stream(
      "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", 3);
  EXPECT_FALSE(stopped.ok);
  EXPECT_THAT(stopped.error, HasSubstr("ignore_eos"));
  EXPECT_THAT(read_stream("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", 1).error,
              HasSubstr("[DONE]"));
  EXPECT_THAT(read_stream("data: {\"error\":{\"message\":\"no\"}}\n\ndata: [DONE]\n\n", 1).error,
              HasSubstr("stream error"));
}

TEST(RingbenchOpenAi, TablesSayNotAvailableWithoutServerTimings) {
  ringbench::RequestRecord ok;
  ok.ok = true;
  ok.output_tokens = 4;
  ok.token_count = ringbench::TokenCount::kUsage;
  ringbench::Report r;
  r.config.transport = ringbench::Transport::kHttp;
  r.summary = ringbench::summarize({ok}, 1.0);
  r.server = {{"model", "m"},
              {"facts_from", "GET /v1/models"},
              {"prompt_vocab", 32000},
              {"prompt_vocab_from", "default"}};
  EXPECT_THAT(r.summary.token_count, Eq("usage"));
  EXPECT_THAT(ringbench::report_json(r)["results"]["token_count"], Eq("usage"));
  const std::string table = ringbench::format_table(r);
  EXPECT_THAT(table, HasSubstr("queue (server)           n/a"));
  EXPECT_THAT(table, HasSubstr("counted from: usage"));
  EXPECT_THAT(table, HasSubstr("vocabulary of 32000 (default)"));
  EXPECT_THAT(ringbench::format_transport_table({r}), HasSubstr("n/a"));

  // With the server's timings (ringserve), numbers as before.
  ok.has_server_timings = true;
  r.summary = ringbench::summarize({ok}, 1.0);
  EXPECT_THAT(ringbench::format_table(r), Not(HasSubstr("n/a")));
}

}  // namespace
