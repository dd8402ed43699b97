// `ringserve tokenize` end to end: the real binary, its output and exit codes.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/test_support.h"

namespace ringserve::testing {
namespace {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CliResult run(const std::string& args) {
  const std::string cmd = quote(binary_path("ringserve").string()) + " tokenize " + args + " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class TokenizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(binary_path("ringserve"))) {
      GTEST_SKIP() << "ringserve binary not built";
    }
  }
  const std::string tokenizer_ =
      quote(fixture_path("tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz").string());
};

TEST_F(TokenizeCli, PrintsIds) {
  const CliResult r = run("--tokenizer " + tokenizer_ + " --text 'Hello, world!'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("9707,11,1879,0\n"), std::string::npos) << r.out;
}

TEST_F(TokenizeCli, PrintsJson) {
  const CliResult r = run("--tokenizer " + tokenizer_ + " --text 'Hello, world!' --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("{\"ids\":[9707,11,1879,0]}"), std::string::npos) << r.out;
}

TEST_F(TokenizeCli, ReadsAFileAndMatchesSpecialTokens) {
  TempDir dir;
  std::ofstream(dir.path() / "in.txt") << "<｜User｜>Hello";
  const CliResult r =
      run("--tokenizer " + tokenizer_ + " --file " + quote((dir.path() / "in.txt").string()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("151644,9707\n"), std::string::npos) << r.out;
}

TEST_F(TokenizeCli, DecodesIds) {
  const CliResult r =
      run("--tokenizer " + tokenizer_ + " --decode --text '[9707, 11, 1879, 0]' --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("{\"text\":\"Hello, world!\"}"), std::string::npos) << r.out;
}

TEST_F(TokenizeCli, Errors) {
  CliResult r = run("--tokenizer /nonexistent/tokenizer.json --text hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not_found"), std::string::npos) << r.out;
  r = run("--tokenizer " + tokenizer_ + " --decode --text '1,x,3'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("token ids"), std::string::npos) << r.out;
  r = run("--tokenizer " + tokenizer_ + " --decode --text '99999999'");
  EXPECT_EQ(r.exit_code, 1);
  r = run("--tokenizer " + tokenizer_);
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace ringserve::testing
