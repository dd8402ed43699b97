// The pre-tokenizer: Qwen2's split regex with Oniguruma's class semantics,
// and the Split behaviors of Hugging Face tokenizers.
#include <gtest/gtest.h>

#include "tokenizer/pre_tokenizer.h"

namespace ringserve::testing {
namespace {

using tokenizer::PreTokenizer;
using tokenizer::SplitBehavior;
using tokenizer::SplitStep;

constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> split(const std::string& pattern, SplitBehavior behavior,
                               const std::string& text, bool invert = false) {
  auto pt = PreTokenizer::create({SplitStep{pattern, behavior, invert}});
  EXPECT_TRUE(pt) << pt.error().to_string();
  PreTokenizer::Pieces pieces;
  pt->split(text, pieces);
  return {pieces.pieces.begin(), pieces.pieces.end()};
}

using V = std::vector<std::string>;

TEST(PreTokenizer, Qwen2Pattern) {
  EXPECT_EQ(split(kQwen2, SplitBehavior::kIsolated, "I'm here  now\n\n x123"),
            (V{"I", "'m", " here", " ", " now", "\n\n", " x", "1", "2", "3"}));
  EXPECT_EQ(split(kQwen2, SplitBehavior::kIsolated, "HELLO'S"), (V{"HELLO", "'S"}));
}

TEST(PreTokenizer, WhitespaceClassFollowsOniguruma) {
  // U+180E is not White_Space (Oniguruma's \s), though PCRE2's \s takes it.
  EXPECT_EQ(split(kQwen2, SplitBehavior::kIsolated, "\u180E!"), (V{"\u180E!"}));
  // U+3000 (ideographic space) is a space separator in both.
  EXPECT_EQ(split(kQwen2, SplitBehavior::kIsolated, "a\u3000\u3000b"),
            (V{"a", "\u3000", "\u3000b"}));
}

TEST(PreTokenizer, SplitBehaviors) {
  const std::string text = "a--b-c";
  EXPECT_EQ(split("-", SplitBehavior::kIsolated, text), (V{"a", "-", "-", "b", "-", "c"}));
  EXPECT_EQ(split("-", SplitBehavior::kRemoved, text), (V{"a", "b", "c"}));
  EXPECT_EQ(split("-", SplitBehavior::kMergedWithPrevious, text), (V{"a-", "-", "b-", "c"}));
  EXPECT_EQ(split("-", SplitBehavior::kMergedWithNext, text), (V{"a", "-", "-b", "-c"}));
  EXPECT_EQ(split("-", SplitBehavior::kContiguous, text), (V{"a", "--", "b", "-", "c"}));
  EXPECT_EQ(split("-", SplitBehavior::kRemoved, text, /*invert=*/true), (V{"-", "-", "-"}));
}

TEST(PreTokenizer, BadPatternIsAnError) {
  auto pt = PreTokenizer::create({SplitStep{"(unclosed", SplitBehavior::kIsolated, false}});
  EXPECT_FALSE(pt);
}

}  // namespace
}  // namespace ringserve::testing
