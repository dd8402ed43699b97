// StreamDecoder hands out only complete UTF-8, whatever the token boundaries.
#include <gtest/gtest.h>

#include <random>

#include "support/test_support.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_fixture.h"

namespace ringserve::testing {
namespace {

using tokenizer::StreamDecoder;

bool valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = tokenizer::utf8::valid_sequence_length(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

int32_t byte_id(const tokenizer::Tokenizer& tok, uint8_t b) {
  const char c = static_cast<char>(b);
  return tok.token_to_id(tokenizer::byte_level::to_spelling(std::string_view(&c, 1))).value();
}

TEST(StreamDecoder, CjkAndEmojiSplitAcrossTokens) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  const std::string text =
      "按很多人的直觉 🥌🪑👍🏽 한국어 🫖 эмодзи 🤌 end";
  const auto ids = tok->encode(text);
  // The test is only meaningful if some token ends inside a code point.
  bool some_partial = false;
  for (const int32_t id : ids) some_partial |= !valid_utf8(tok->decode(std::span(&id, 1)));
  ASSERT_TRUE(some_partial);

  StreamDecoder stream(tok);
  std::string joined;
  for (const int32_t id : ids) {
    const std::string piece = stream.push(id);
    EXPECT_TRUE(valid_utf8(piece)) << "after id " << id;
    joined += piece;
  }
  joined += stream.flush();
  EXPECT_EQ(joined, tok->decode(ids));
  EXPECT_EQ(joined, text);
}

TEST(StreamDecoder, HoldsBackBytesUntilTheCodePointCompletes) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  const std::string emoji = "😀";  // F0 9F 98 80
  StreamDecoder stream(tok);
  for (size_t i = 0; i + 1 < emoji.size(); ++i) {
    EXPECT_EQ(stream.push(byte_id(*tok, static_cast<uint8_t>(emoji[i]))), "");
  }
  EXPECT_EQ(stream.push(byte_id(*tok, static_cast<uint8_t>(emoji.back()))), emoji);
  EXPECT_EQ(stream.flush(), "");
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementCharacters) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  StreamDecoder stream(tok);
  EXPECT_EQ(stream.push(byte_id(*tok, 0xFF)), "\xEF\xBF\xBD");  // can never start a sequence
  EXPECT_EQ(stream.push(byte_id(*tok, 'a')), "a");
  EXPECT_EQ(stream.push(byte_id(*tok, 0xE4)), "");  // a 3-byte lead...
  EXPECT_EQ(stream.push(byte_id(*tok, 0xB8)), "");  // ...and one continuation
  EXPECT_EQ(stream.push(byte_id(*tok, 'b')),
            "\xEF\xBF\xBD"
            "b");  // cut short: one U+FFFD
  EXPECT_EQ(stream.push(byte_id(*tok, 0xE4)), "");
  EXPECT_EQ(stream.flush(), "\xEF\xBF\xBD");  // left over at the end
  EXPECT_EQ(stream.flush(), "");
}

TEST(StreamDecoder, SkipSpecialAndOutOfRangeIds) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  StreamDecoder stream(tok, /*skip_special=*/true);
  EXPECT_EQ(stream.push(151646), "");  // BOS
  EXPECT_EQ(stream.push(9707), "Hello");
  EXPECT_EQ(stream.push(-5), "");
  EXPECT_EQ(stream.push(1 << 30), "");
  EXPECT_EQ(stream.push(151648), "<think>");  // not special: kept
}

TEST(StreamDecoder, RandomTokenSequencesAlwaysYieldValidUtf8) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  std::mt19937_64 rng(test_seed());
  std::uniform_int_distribution<int32_t> any_id(0, tok->vocab_size() - 1);
  for (int round = 0; round < 200; ++round) {
    StreamDecoder stream(tok);
    std::vector<int32_t> ids;
    std::string joined;
    for (int i = 0; i < 40; ++i) {
      ids.push_back(any_id(rng));
      const std::string piece = stream.push(ids.back());
      ASSERT_TRUE(valid_utf8(piece));
      joined += piece;
    }
    joined += stream.flush();
    ASSERT_TRUE(valid_utf8(joined));
    const std::string raw = tok->decode(ids);
    if (valid_utf8(raw)) {
      EXPECT_EQ(joined, raw);
    }
  }
}

}  // namespace
}  // namespace ringserve::testing
