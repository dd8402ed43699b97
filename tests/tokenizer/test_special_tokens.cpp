// Added and special tokens are matched whole, longest first, before BPE.
#include <gtest/gtest.h>

#include "tiny_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_fixture.h"

namespace ringserve::testing {
namespace {

using tokenizer::Tokenizer;

constexpr int32_t kBos = 151646;
constexpr int32_t kUser = 151644;
constexpr int32_t kAssistant = 151645;
constexpr int32_t kEos = 151643;
constexpr int32_t kThink = 151648;
constexpr int32_t kEndThink = 151649;

std::shared_ptr<const Tokenizer> tiny(
    const std::vector<TinyAdded>& added,
    std::vector<std::pair<std::string, std::string>> merges = {}) {
  auto t = Tokenizer::from_json(tiny_tokenizer_json(merges, added).dump(), "tiny");
  EXPECT_TRUE(t) << t.error().to_string();
  return t ? *t : nullptr;
}

TEST(SpecialTokens, FixtureIdsAndFlags) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->vocab_size(), 151665);
  EXPECT_EQ(tok->token_to_id("<｜begin▁of▁sentence｜>"), kBos);
  EXPECT_EQ(tok->token_to_id("<think>"), kThink);
  EXPECT_EQ(tok->token_to_id("Ġhello"), 23811);
  EXPECT_EQ(tok->token_to_id("no such token"), std::nullopt);
  EXPECT_TRUE(tok->is_special(kBos));
  EXPECT_TRUE(tok->is_special(kEos));
  EXPECT_FALSE(tok->is_special(kThink));  // <think> is an added, non-special token
  EXPECT_FALSE(tok->is_special(9707));
  EXPECT_FALSE(tok->is_special(-1));
  EXPECT_FALSE(tok->is_special(1 << 30));
}

TEST(SpecialTokens, MatchedWholeInsideText) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  const auto ids = tok->encode("<｜begin▁of▁sentence｜><｜User｜>Hello<｜Assistant｜><think>\n");
  EXPECT_EQ(ids, (std::vector<int32_t>{kBos, kUser, 9707, kAssistant, kThink, 198}));
  // Glued to words on both sides.
  const auto glued = tok->encode("a</think>b<｜end▁of▁sentence｜>c");
  EXPECT_EQ(glued, (std::vector<int32_t>{64, kEndThink, 65, kEos, 66}));
  EXPECT_EQ(tok->decode(glued), "a</think>b<｜end▁of▁sentence｜>c");
  EXPECT_EQ(tok->decode(glued, /*skip_special=*/true), "a</think>bc");
}

TEST(SpecialTokens, PartialMarkersAreText) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  for (const std::string text : {"<｜User", "<think", "<｜User｜", "</think >", "<<think>"}) {
    const auto ids = tok->encode(text);
    EXPECT_EQ(tok->decode(ids), text);
    if (text != "<<think>") {
      for (const int32_t id : ids) EXPECT_LT(id, 151643) << text;
    }
  }
  EXPECT_EQ(tok->encode("<<think>").back(), kThink);
}

TEST(SpecialTokens, ParseSpecialOffLeavesSpecialTokensAsText) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  const std::string text = "<｜User｜>hi<｜Assistant｜>";
  const auto ids = tok->encode(text, /*parse_special=*/false);
  for (const int32_t id : ids) EXPECT_FALSE(tok->is_special(id));
  EXPECT_EQ(tok->decode(ids), text);
  EXPECT_GT(ids.size(), 4u);
  // Hugging Face's encode_special_tokens still matches non-special added
  // tokens such as <think>.
  EXPECT_EQ(tok->encode("<think>", false), (std::vector<int32_t>{kThink}));
}

TEST(SpecialTokens, LongestMatchWins) {
  const auto tok = tiny({{300, "<a>"}, {301, "<a><b>"}, {302, "<a><b><c"}});
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("<a><b>"), (std::vector<int32_t>{301}));
  EXPECT_EQ(tok->encode("<a><b><c"), (std::vector<int32_t>{302}));
  EXPECT_EQ(tok->encode("<a><b><"), (std::vector<int32_t>{301, '<'}));
  EXPECT_EQ(tok->encode("<a>x<a>"), (std::vector<int32_t>{300, 'x', 300}));
}

TEST(SpecialTokens, StripAndSingleWordFlags) {
  const auto tok = tiny({{300, "[L]", true, /*lstrip=*/true},
                         {301, "[R]", true, false, /*rstrip=*/true},
                         {302, "w", false, false, false, /*single_word=*/true}});
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("a  [L]"), (std::vector<int32_t>{'a', 300}));
  EXPECT_EQ(tok->encode("[R] \t b"), (std::vector<int32_t>{301, 'b'}));
  EXPECT_EQ(tok->encode("w"), (std::vector<int32_t>{302}));
  EXPECT_EQ(tok->encode("a w b"), (std::vector<int32_t>{'a', ' ', 302, ' ', 'b'}));
  // Inside a word it is not a match.
  EXPECT_EQ(tok->encode("awb"), (std::vector<int32_t>{'a', 'w', 'b'}));
}

TEST(SpecialTokens, AddedTokenIdsBeyondVocabDecode) {
  const auto tok = tiny({{1000, "<｜x｜>"}});
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->vocab_size(), 1001);
  EXPECT_EQ(tok->decode(std::vector<int32_t>{1000, 'a'}), "<｜x｜>a");
  // Ids in the gap and out of range decode to nothing.
  EXPECT_EQ(tok->decode(std::vector<int32_t>{500, -3, 1001, 'b'}), "b");
}

}  // namespace
}  // namespace ringserve::testing
