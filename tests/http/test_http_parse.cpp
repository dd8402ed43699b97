// Unit tests of the HTTP layer's pure parts: OpenAI request parsing, the
// reasoning splitter, response shapes and the Prometheus exposition.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fake_backend.h"
#include "http/metrics.h"
#include "http/openai_request.h"
#include "http/openai_response.h"
#include "http/reasoning_stream.h"

namespace ringserve::http {
namespace {

using nlohmann::json;

class ParseTest : public ::testing::Test {
 protected:
  ParseTest() {
    info_.max_context = 256;
    info_.vocab_size = 256;
    ctx_ = ParseContext{&tokenizer_, &info_, 64, 200};
  }
  Expected<ApiCall> chat(const std::string& body) {
    return parse_api_call(Endpoint::kChat, body, ctx_);
  }
  Expected<ApiCall> completion(const std::string& body) {
    return parse_api_call(Endpoint::kCompletions, body, ctx_);
  }

  testing::ByteTokenizer tokenizer_;
  engine::EngineInfo info_;
  ParseContext ctx_;
};

TEST_F(ParseTest, ChatAppliesTemplateAndSampling) {
  auto call = chat(R"({"model":"m","messages":[{"role":"user","content":"hi"}],
                       "temperature":0.5,"top_p":0.9,"top_k":40,"seed":7,"max_tokens":10,
                       "stop":["\n\n","END"],"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(call) << call.error().to_string();
  const std::string prompt = tokenizer_.decode(call->request.prompt);
  EXPECT_NE(prompt.find("hi"), std::string::npos);
  EXPECT_NE(prompt.find("<think>\n"), std::string::npos);  // generation prompt opened
  EXPECT_FLOAT_EQ(call->request.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(call->request.sampling.top_p, 0.9f);
  EXPECT_EQ(call->request.sampling.top_k, 40);
  EXPECT_EQ(call->request.sampling.seed, 7u);
  EXPECT_EQ(call->request.stop.max_new_tokens, 10);
  EXPECT_EQ(call->request.stop.stop_strings, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(call->stream);
  EXPECT_TRUE(call->include_usage);
  EXPECT_TRUE(call->split_reasoning);
}

TEST_F(ParseTest, ChatDefaultMaxTokensIsCappedByContextAndOption) {
  auto call = chat(R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->request.stop.max_new_tokens, 64);  // the option's cap
  EXPECT_FLOAT_EQ(call->request.sampling.temperature, 1.0f);
}

TEST_F(ParseTest, CompletionAcceptsTextAndTokenIds) {
  auto text = completion(R"({"prompt":"abc","max_tokens":3})");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->request.prompt, (std::vector<int32_t>{'a', 'b', 'c'}));
  auto ids = completion(R"({"prompt":[1,2,3]})");
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->request.prompt, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ids->request.stop.max_new_tokens, 16);  // OpenAI's completions default
  EXPECT_FALSE(ids->split_reasoning);
}

TEST_F(ParseTest, MalformedAndWrongTypesAreInvalidArgument) {
  for (const char* body :
       {"{", "[]", "not json", R"({"messages":"hi"})", R"({"messages":[]})",
        R"({"messages":[{"content":"x"}]})",
        R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})",
        R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"10"})",
        R"({"messages":[{"role":"user","content":"x"}],"stream":1})",
        R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})",
        R"({"messages":[{"role":"user","content":"x"}],"top_p":0})",
        R"({"messages":[{"role":"user","content":"x"}],"temperature":3})",
        R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})",
        R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":3})",
        R"({"messages":[{"role":"user","content":{"a":1}}]})", R"({"model":5,"messages":[]})"}) {
    auto call = chat(body);
    ASSERT_FALSE(call) << body;
    EXPECT_EQ(call.error().code, Errc::kInvalidArgument) << body << ": " << call.error().message;
  }
}

TEST_F(ParseTest, TooManyTokensIsTooLarge) {
  auto call = chat(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":100000})");
  ASSERT_FALSE(call);
  EXPECT_EQ(call.error().code, Errc::kTooLarge);
  const std::string long_prompt(300, 'x');
  auto call2 = completion(R"({"prompt":")" + long_prompt + R"("})");
  ASSERT_FALSE(call2);
  EXPECT_EQ(call2.error().code, Errc::kTooLarge);
}

TEST_F(ParseTest, UnknownFieldsAreIgnoredButNIsChecked) {
  EXPECT_TRUE(
      chat(R"({"messages":[{"role":"user","content":"x"}],"frequency_penalty":0,"user":"u"})"));
  auto call = chat(R"({"messages":[{"role":"user","content":"x"}],"n":2})");
  ASSERT_FALSE(call);
  EXPECT_EQ(call.error().code, Errc::kUnsupported);
}

TEST_F(ParseTest, LogprobsFlags) {
  auto chat_call =
      chat(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":3})");
  ASSERT_TRUE(chat_call);
  EXPECT_TRUE(chat_call->logprobs);
  EXPECT_EQ(chat_call->request.sampling.top_logprobs, 3);
  auto legacy = completion(R"({"prompt":"x","logprobs":2})");
  ASSERT_TRUE(legacy);
  EXPECT_EQ(legacy->request.sampling.top_logprobs, 2);
  auto none = completion(R"({"prompt":"x"})");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->request.sampling.top_logprobs, 0);
}

TEST(ReasoningStream, SplitsAtCloseTagAcrossDeltas) {
  ReasoningStream r;
  std::string reasoning, content;
  for (const char* piece : {"Let me ", "think.</th", "ink>", "\n\nThe answer", " is 4."}) {
    auto d = r.push(piece);
    reasoning += d.reasoning;
    content += d.content;
  }
  auto d = r.flush();
  reasoning += d.reasoning;
  content += d.content;
  EXPECT_EQ(reasoning, "Let me think.");
  EXPECT_EQ(content, "The answer is 4.");
}

TEST(ReasoningStream, DropsALeadingThinkTagAndKeepsUnfinishedReasoning) {
  ReasoningStream r;
  auto a = r.push("<thi");
  EXPECT_TRUE(a.reasoning.empty());
  auto b = r.push("nk>\nstill thinking <");
  auto c = r.flush();
  EXPECT_EQ(a.reasoning + b.reasoning + c.reasoning, "\nstill thinking <");
  EXPECT_TRUE((b.content + c.content).empty());
}

TEST(ReasoningStream, PlainModeIsAllContent) {
  ReasoningStream r(/*starts_in_reasoning=*/false);
  auto a = r.push("\n\nhello </think> world");
  EXPECT_EQ(a.content, "hello </think> world");
}

TEST(ResponseBuilder, ChatBodyCarriesReasoningUsageAndLogprobs) {
  testing::ByteTokenizer tok;
  ApiCall call;
  call.endpoint = Endpoint::kChat;
  call.split_reasoning = true;
  call.logprobs = true;
  call.top_logprobs = 2;
  ResponseBuilder b(call, "model-x", 0x2a, 1700000000, &tok);
  serve::TokenDelta d1{1, {1}, "hmm</think>", {{'h', -0.1f, {{'h', -0.1f}, {'x', -2.0f}}}}};
  serve::TokenDelta d2{1, {2}, "\n\nYes.", {{'Y', -0.2f, {{'Y', -0.2f}, {'N', -3.0f}}}}};
  b.collect(d1);
  b.collect(d2);
  serve::Completion done;
  done.reason = serve::FinishReason::kStop;
  done.prompt_tokens = 5;
  done.completion_tokens = 2;
  json body = json::parse(b.body(done));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["id"], "chatcmpl-2a");
  EXPECT_EQ(body["model"], "model-x");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Yes.");
  EXPECT_EQ(body["choices"][0]["message"]["reasoning_content"], "hmm");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["total_tokens"], 7);
  ASSERT_EQ(body["choices"][0]["logprobs"]["content"].size(), 2u);
  EXPECT_EQ(body["choices"][0]["logprobs"]["content"][1]["top_logprobs"].size(), 2u);
}

TEST(ResponseBuilder, StreamEndsWithFinishUsageAndDone) {
  ApiCall call;
  call.endpoint = Endpoint::kCompletions;
  call.include_usage = true;
  ResponseBuilder b(call, "m", 1, 0, nullptr);
  std::string sse = b.stream_delta(serve::TokenDelta{1, {5}, "hi", {}});
  EXPECT_EQ(sse.rfind("data: ", 0), 0u);
  EXPECT_EQ(json::parse(sse.substr(6))["choices"][0]["text"], "hi");
  serve::Completion done;
  done.reason = serve::FinishReason::kLength;
  const std::string end = b.stream_end(done);
  EXPECT_NE(end.find("\"finish_reason\":\"length\""), std::string::npos);
  EXPECT_NE(end.find("\"usage\""), std::string::npos);
  EXPECT_EQ(end.substr(end.size() - 14), "data: [DONE]\n\n");
}

TEST(Metrics, ExpositionIsWellFormed) {
  serve::StatsSnapshot s;
  s.requests_total = 3;
  s.batch_size_histogram = {0, 2, 1};
  s.ttft_histogram.observe(0.003);
  s.ttft_histogram.observe(20.0);
  ServerFacts facts;
  facts.ready = true;
  facts.model_name = "q\"uote";
  facts.preflight_verdict = "warn";
  const std::string text = render_metrics(&s, facts);
  // Every non-comment line is `name{labels} value` with a parseable value,
  // and every metric has HELP and TYPE lines before its samples.
  std::set<std::string> typed;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("#", 0) == 0) continue;
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    std::string name = line.substr(0, std::min(line.find('{'), space));
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string sfx(suffix);
      if (name.size() > sfx.size() &&
          name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0 && !typed.count(name)) {
        name.resize(name.size() - sfx.size());
      }
    }
    EXPECT_TRUE(typed.count(name)) << "sample before TYPE: " << line;
    size_t used = 0;
    (void)std::stod(line.substr(space + 1), &used);
    EXPECT_EQ(used, line.size() - space - 1) << line;
  }
  EXPECT_NE(text.find("ringserve_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("ringserve_batch_size_sum 4"), std::string::npos);
  EXPECT_NE(text.find("model=\"q\\\"uote\""), std::string::npos);
  EXPECT_NE(text.find("verdict=\"warn\""), std::string::npos);
}

}  // namespace
}  // namespace ringserve::http
