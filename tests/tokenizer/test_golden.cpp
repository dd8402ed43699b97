// Every line of golden_encodings.jsonl (ids from Hugging Face tokenizers)
// must encode to exactly its ids and decode back to its "decoded" text.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "tokenizer_fixture.h"

namespace ringserve::testing {
namespace {

struct GoldenLine {
  size_t line = 0;
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
};

std::vector<GoldenLine> read_golden() {
  std::ifstream in(fixture_path("tokenizer/golden_encodings.jsonl"));
  std::vector<GoldenLine> lines;
  std::string row;
  for (size_t n = 1; std::getline(in, row); ++n) {
    if (row.empty()) continue;
    const auto j = nlohmann::json::parse(row);
    lines.push_back({n, j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>(),
                     j.at("decoded").get<std::string>()});
  }
  return lines;
}

TEST(TokenizerGolden, EveryLineEncodesToTheHuggingFaceIds) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  const auto golden = read_golden();
  ASSERT_GT(golden.size(), 400u);
  size_t failures = 0;
  for (const auto& g : golden) {
    const auto ids = tok->encode(g.text);
    EXPECT_EQ(ids, g.ids) << "line " << g.line << ": " << g.text;
    if (ids != g.ids && ++failures > 20) FAIL() << "too many failures";
  }
}

TEST(TokenizerGolden, EveryLineDecodesBack) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  for (const auto& g : read_golden()) {
    EXPECT_EQ(tok->decode(g.ids), g.decoded) << "line " << g.line;
  }
}

TEST(TokenizerGolden, StreamingDecodeOfEveryLineEqualsDecode) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  for (const auto& g : read_golden()) {
    tokenizer::StreamDecoder stream(tok);
    std::string joined;
    for (const int32_t id : g.ids) joined += stream.push(id);
    joined += stream.flush();
    EXPECT_EQ(joined, g.decoded) << "line " << g.line;
  }
}

}  // namespace
}  // namespace ringserve::testing
