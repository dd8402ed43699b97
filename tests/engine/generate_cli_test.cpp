// `ringserve generate` end to end: the real binary on the fixture models.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

using ringserve::testing::binary_path;
using ringserve::testing::fixture_path;

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun run_generate(const std::string& args) {
  const std::string cmd = binary_path("ringserve").string() + " generate " + args + " 2>/dev/null";
  CliRun r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string model(const char* name) {
  return fixture_path(std::string("models/") + name).string();
}

TEST(GenerateCli, JsonHasPromptIdsTokensLogprobsAndTimings) {
  const CliRun r = run_generate("--model " + model("tiny-qwen2-int8exact") +
                                " --prompt-ids 971,5,6 --max-new-tokens 7 --ignore-eos "
                                "--top-logprobs 3 --backend cpu --threads 1 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);  // exactly one object
  EXPECT_EQ(j.at("prompt_ids"), nlohmann::json::array({971, 5, 6}));
  ASSERT_EQ(j.at("ids").size(), 7u);
  EXPECT_EQ(j.at("text"), "");  // the fixtures have no tokenizer
  EXPECT_EQ(j.at("finish_reason"), "length");
  EXPECT_EQ(j.at("backend"), "cpu");
  ASSERT_EQ(j.at("top_logprobs").size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    const auto& top = j.at("top_logprobs")[i];
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].at("id"), j.at("ids")[i]);  // greedy picks the best
    EXPECT_LE(static_cast<double>(top[1].at("logprob")), static_cast<double>(top[0].at("logprob")));
  }
  EXPECT_GE(static_cast<double>(j.at("timings").at("decode_tokens_per_s")), 0.0);
  EXPECT_EQ(j.at("timings").at("prefill_tokens"), 3);
}

TEST(GenerateCli, SameSeedSameSample) {
  const std::string args = "--model " + model("tiny-qwen2") +
                           " --prompt-ids 1,2,3 --max-new-tokens 10 --ignore-eos --temperature 1.5 "
                           "--top-k 50 --top-p 0.9 --threads 1 --json --seed ";
  const auto a = nlohmann::json::parse(run_generate(args + "5").out);
  const auto b = nlohmann::json::parse(run_generate(args + "5").out);
  const auto c = nlohmann::json::parse(run_generate(args + "6").out);
  EXPECT_EQ(a.at("ids"), b.at("ids"));
  EXPECT_NE(a.at("ids"), c.at("ids"));
}

TEST(GenerateCli, StopsAtEosUnlessIgnored) {
  // The config's eos id is 2: it ends generation and is never reported.
  const CliRun free_run = run_generate("--model " + model("tiny-qwen2") +
                                       " --prompt-ids 926 --max-new-tokens 20 --threads 1 --json");
  ASSERT_EQ(free_run.status, 0);
  const auto j = nlohmann::json::parse(free_run.out);
  for (const auto& id : j.at("ids")) EXPECT_NE(id, 2);  // eos never reported as a token
  if (j.at("ids").size() < 20u) {
    EXPECT_EQ(j.at("finish_reason"), "stop");
  }
}

TEST(GenerateCli, BadInputIsAClearErrorNotACrash) {
  EXPECT_EQ(run_generate("--model " + model("tiny-qwen2") + " --prompt-ids 1,x,3").status, 1);
  EXPECT_EQ(run_generate("--model " + model("tiny-qwen2") + " --prompt-ids 5000").status, 1);
  EXPECT_EQ(run_generate("--model " + model("tiny-qwen2") + " --prompt-ids -4").status, 1);
  EXPECT_EQ(run_generate("--model " + model("tiny-qwen2") + " --prompt hello").status, 1);
  EXPECT_EQ(
      run_generate("--model " + model("tiny-qwen2") + " --prompt-ids 1 --max-new-tokens 100000")
          .status,
      1);
  EXPECT_EQ(run_generate("--model /nonexistent --prompt-ids 1").status, 1);
  EXPECT_NE(run_generate("--model " + model("tiny-qwen2")).status, 0);
  EXPECT_NE(run_generate("--model " + model("tiny-qwen2") + " --prompt-ids 1 --backend gpu").status,
            0);
}

}  // namespace
