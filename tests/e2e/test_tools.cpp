// ringctl and ringbench against the real server: smoke runs that check what
// they print, not just that they exit.
#include <gmock/gmock.h>

#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "served_model.h"

namespace ringserve::e2e {
namespace {

using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Ne;
using ::testing::Not;

class ToolsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ =
        new ServedModel({"--max-batch", "4", "--batch-window-ms", "300", "--http", "127.0.0.1:0"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(server_->ready()) << server_->log(); }

  RunResult ringctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {testing::binary_path("ringctl").string(), "--socket",
                                     server_->socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(std::move(argv), server_->dir());
  }
  RunResult ringbench(std::vector<std::string> args) {
    std::vector<std::string> argv = {testing::binary_path("ringbench").string(), "--socket",
                                     server_->socket(), "--no-progress"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(std::move(argv), server_->dir());
  }
  // HOST:PORT of the server's HTTP API (port 0: the kernel's pick, logged).
  std::string http_address() {
    std::smatch m;
    const std::string log = server_->log();
    if (!std::regex_search(log, m, std::regex(R"(HTTP API listening on (\S+:\d+))"))) return "";
    return m[1];
  }
  static inline ServedModel* server_ = nullptr;
};

TEST_F(ToolsTest, RingctlGenerateMatchesRingserveGenerate) {
  const std::vector<int32_t> prompt = {926};
  Reference ref = reference_generation(prompt, 10, true, server_->dir());
  ASSERT_TRUE(ref.error.empty()) << ref.error;
  for (const char* transport : {"", "--no-shm"}) {
    std::vector<std::string> args = {"generate", "--prompt-ids", "926",   "-n",
                                     "10",       "--ignore-eos", "--json"};
    if (*transport) args.insert(args.begin(), transport);
    RunResult r = ringctl(args);
    ASSERT_THAT(r.status, Eq(0)) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_THAT(j["ids"].get<std::vector<int32_t>>(), Eq(ref.ids));
    EXPECT_THAT(j["finish_reason"], Eq("length"));
    EXPECT_THAT(j["completion_tokens"], Eq(10));
  }
}

TEST_F(ToolsTest, RingctlStreamsIdsAndReportsErrors) {
  RunResult r = ringctl({"generate", "--prompt-ids", "926", "-n", "4", "--ids", "--ignore-eos"});
  ASSERT_THAT(r.status, Eq(0)) << r.err;
  Reference ref = reference_generation({926}, 4, true, server_->dir());
  std::string expected;
  for (int32_t id : ref.ids) expected += std::to_string(id) + " ";
  EXPECT_THAT(r.out, HasSubstr(expected));
  EXPECT_THAT(r.err, HasSubstr("4 tokens, length"));

  RunResult bad = ringctl({"generate", "--prompt-ids", "1,2,99999", "-n", "4"});
  EXPECT_THAT(bad.status, Eq(1));
  EXPECT_THAT(bad.err, HasSubstr("vocabulary"));
  RunResult usage = ringctl({"generate", "-n", "4"});
  EXPECT_THAT(usage.status, Eq(2));
}

TEST_F(ToolsTest, RingctlStats) {
  RunResult r = ringctl({"stats", "--json"});
  ASSERT_THAT(r.status, Eq(0)) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_THAT(j["engine"], Eq("cpu"));
  EXPECT_THAT(j["batch_size_histogram"].size(), Eq(5u));
  RunResult table = ringctl({"stats"});
  ASSERT_THAT(table.status, Eq(0));
  EXPECT_THAT(table.out, HasSubstr("batch sizes"));
}

TEST_F(ToolsTest, RingctlWithoutAServerSaysSo) {
  RunResult r = run({testing::binary_path("ringctl").string(), "--socket",
                     (server_->dir() / "nobody.sock").string(), "stats"},
                    server_->dir());
  EXPECT_THAT(r.status, Eq(1));
  EXPECT_THAT(r.err, HasSubstr("unavailable"));
}

TEST_F(ToolsTest, RingbenchBatchModeMeasuresExactLengthsAndWritesJson) {
  const std::string json = (server_->dir() / "batch.json").string();
  RunResult r = ringbench({"--input-len", "16", "--output-len", "8", "--batch", "2", "--runs", "2",
                           "--warmup", "1", "--json", json, "--label", "smoke"});
  ASSERT_THAT(r.status, Eq(0)) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("output tokens/s"));
  EXPECT_THAT(r.out, HasSubstr("time to 1st token"));
  nlohmann::json j = nlohmann::json::parse(testing::read_file(json), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_THAT(j["schema"], Eq("ringbench/1"));
  EXPECT_THAT(j["results"]["requests_ok"], Eq(4));
  EXPECT_THAT(j["results"]["output_tokens"], Eq(32));
  EXPECT_THAT(j["results"]["itl_ms"]["count"], Eq(4 * 7));
  EXPECT_THAT(j["config"]["label"], Eq("smoke"));
  // Each round of two was batched by the server: 2 prefills + 7 decodes.
  const auto hist = j["server"]["batch_size_histogram"].get<std::vector<uint64_t>>();
  ASSERT_THAT(hist.size(), Eq(5u));
  EXPECT_THAT(hist[2], Eq(2u * 8u));

  RunResult cmp =
      run({testing::binary_path("ringbench").string(), "compare", json, json}, server_->dir());
  ASSERT_THAT(cmp.status, Eq(0)) << cmp.err;
  EXPECT_THAT(cmp.out, HasSubstr("1.00x"));
}

TEST_F(ToolsTest, RingbenchClosedAndOpenLoopOverBothTransports) {
  RunResult closed = ringbench({"--input-len", "8", "--output-len", "4", "--concurrency", "3",
                                "--requests", "6", "--transport", "socket", "--warmup", "0"});
  ASSERT_THAT(closed.status, Eq(0)) << closed.out << closed.err;
  EXPECT_THAT(closed.out, HasSubstr("6 ok, 0 failed"));
  RunResult open = ringbench({"--input-len", "8", "--output-len", "4", "--rate", "50", "--requests",
                              "5", "--transport", "shm", "--warmup", "0"});
  ASSERT_THAT(open.status, Eq(0)) << open.out << open.err;
  EXPECT_THAT(open.out, HasSubstr("5 ok, 0 failed"));
}

// Sampled load: the settings reach the server (on the same prompts a hot
// run's tokens differ from the greedy run's, top-k 1 is greedy again), a
// seeded run repeats, and HTTP carries the same settings and seeds as the
// ring (the same digest).
TEST_F(ToolsTest, RingbenchSampledRunsRepeatAndReachTheServer) {
  const std::string address = http_address();
  ASSERT_FALSE(address.empty()) << server_->log();
  int n = 0;
  auto digest = [&](std::vector<std::string> extra) -> std::string {
    const std::string json = (server_->dir() / fmt::format("sampled-{}.json", n++)).string();
    std::vector<std::string> args = {"--input-len", "8", "--output-len", "12", "--batch", "2",
                                     "--runs",      "2", "--warmup",     "0",  "--json",  json};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = ringbench(args);
    EXPECT_THAT(r.status, Eq(0)) << r.out << r.err;
    const nlohmann::json j = nlohmann::json::parse(testing::read_file(json), nullptr, false);
    if (j.is_discarded()) return "";
    return j["results"].value("token_digest", "");
  };
  const std::string greedy = digest({});
  const std::string hot = digest({"--temperature", "2"});
  EXPECT_THAT(greedy.size(), Eq(16u));
  EXPECT_THAT(digest({}), Eq(greedy));
  EXPECT_THAT(hot.size(), Eq(16u));
  EXPECT_THAT(hot, Ne(greedy));
  EXPECT_THAT(digest({"--temperature", "2"}), Eq(hot));
  EXPECT_THAT(digest({"--temperature", "2", "--top-k", "1"}), Eq(greedy));
  EXPECT_THAT(digest({"--temperature", "2", "--transport", "http", "--http", address}), Eq(hot));

  RunResult loose = ringbench({"--top-p", "0.5"});
  EXPECT_THAT(loose.status, Eq(2));
  EXPECT_THAT(loose.err, HasSubstr("--temperature"));
}

TEST_F(ToolsTest, RingbenchRefusesWhatTheServerCannotHold) {
  RunResult r = ringbench({"--input-len", "500", "--output-len", "100"});
  EXPECT_THAT(r.status, Eq(1));
  EXPECT_THAT(r.err, HasSubstr("context"));
}

TEST_F(ToolsTest, RingbenchOverHttpNeedsNoSocket) {
  const std::string address = http_address();
  ASSERT_FALSE(address.empty()) << server_->log();
  const std::string json = (server_->dir() / "http-only.json").string();
  // As against any OpenAI-compatible server: no socket to reach.
  RunResult r = run({testing::binary_path("ringbench").string(),
                     "--socket",
                     (server_->dir() / "nobody.sock").string(),
                     "--no-progress",
                     "--transport",
                     "http",
                     "--http",
                     address,
                     "--vocab",
                     "1024",
                     "--input-len",
                     "8",
                     "--output-len",
                     "4",
                     "--concurrency",
                     "2",
                     "--requests",
                     "4",
                     "--json",
                     json},
                    server_->dir());
  ASSERT_THAT(r.status, Eq(0)) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("no ringserve socket"));
  EXPECT_THAT(r.out, HasSubstr("4 ok, 0 failed"));
  EXPECT_THAT(r.out, HasSubstr("counted from: token_ids"));
  nlohmann::json j = nlohmann::json::parse(testing::read_file(json), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_THAT(j["results"]["output_tokens"], Eq(16));
  EXPECT_THAT(j["results"]["token_count"], Eq("token_ids"));
  EXPECT_THAT(j["server"]["facts_from"], Eq("GET /v1/models"));
  EXPECT_FALSE(j["server"]["model"].get<std::string>().empty());
  EXPECT_FALSE(j["server"].contains("batch_size_histogram"));

  // --no-socket does not try it; the context from /v1/models is still checked.
  RunResult big = run(
      {testing::binary_path("ringbench").string(), "--no-socket", "--no-progress", "--transport",
       "http", "--http", address, "--vocab", "1024", "--input-len", "500", "--output-len", "100"},
      server_->dir());
  EXPECT_THAT(big.status, Eq(1));
  EXPECT_THAT(big.err, HasSubstr("context"));
  EXPECT_THAT(big.err, Not(HasSubstr("no ringserve socket")));
}

}  // namespace
}  // namespace ringserve::e2e
