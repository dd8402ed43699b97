// The BPE core and the encoder on inputs Hugging Face never sees: invalid
// UTF-8, huge pieces, random bytes.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "support/test_support.h"
#include "tokenizer/bpe.h"
#include "tokenizer/file_source.h"
#include "tokenizer/tokenizer_spec.h"
#include "tokenizer_fixture.h"

namespace ringserve::testing {
namespace {

const tokenizer::BpeModel& fixture_model() {
  static const tokenizer::BpeModel model = [] {
    auto text = tokenizer::read_tokenizer_file(
        fixture_path("tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz"));
    EXPECT_TRUE(text);
    auto spec = tokenizer::parse_tokenizer_json(*text, "fixture");
    EXPECT_TRUE(spec);
    auto m = tokenizer::BpeModel::build(*spec, "fixture");
    EXPECT_TRUE(m);
    return std::move(m).value();
  }();
  return model;
}

TEST(Bpe, ScanAndHeapMergeAgree) {
  const auto& model = fixture_model();
  std::mt19937_64 rng(test_seed());
  const std::vector<std::string> alphabet = {"a",  "b", "e", "n",  "t", " ",   "th", "in",
                                             "的", "é", "😀", "\n", "1", "ing", "er"};
  for (int round = 0; round < 2000; ++round) {
    std::string word;
    const size_t parts = 1 + rng() % 60;
    for (size_t i = 0; i < parts; ++i) word += alphabet[rng() % alphabet.size()];
    std::vector<int32_t> a, b;
    for (const char c : word) a.push_back(model.byte_token(static_cast<uint8_t>(c)));
    b = a;
    model.merge_by_scan(a);
    model.merge_by_heap(b);
    ASSERT_EQ(a, b) << "word: " << word;
  }
}

TEST(Bpe, MergesLowestRankFirst) {
  const auto& model = fixture_model();
  std::vector<int32_t> out;
  model.encode_piece(" hello", out);
  EXPECT_EQ(out, (std::vector<int32_t>{23811}));
  out.clear();
  model.encode_piece("      ", out);  // six spaces: one token in Qwen2's vocab
  EXPECT_EQ(out.size(), 1u);
}

TEST(Encoder, InvalidUtf8BecomesByteTokensAndRoundTrips) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  const std::vector<std::string> inputs = {"\xff",
                                           "abc\xff\xfe def",
                                           "\xc3",
                                           "caf\xc3",
                                           "\xe4\xb8",
                                           "\xed\xa0\x80 surrogate",
                                           "\xf4\x90\x80\x80 above U+10FFFF",
                                           "\xc0\xaf overlong",
                                           "ok \xe4\xb8\xad\xe6 cut",
                                           std::string("nul\0byte", 8)};
  for (const auto& in : inputs) {
    const auto ids = tok->encode(in);
    EXPECT_EQ(tok->decode(ids), in);
  }
  // Each invalid byte is its own token.
  const auto ids = tok->encode("\xff\xfe");
  EXPECT_EQ(ids.size(), 2u);
}

TEST(Encoder, NfcNormalizesValidRunsOnly) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  // e + combining acute -> é; the invalid byte in between stays as is.
  EXPECT_EQ(tok->decode(tok->encode("e\xcc\x81\xff"
                                    "e\xcc\x81")),
            "\xc3\xa9\xff\xc3\xa9");
  // Already-composed text is untouched; singletons like U+2000 map to U+2002.
  EXPECT_EQ(tok->decode(tok->encode("\xe2\x80\x80")), "\xe2\x80\x82");
}

TEST(Encoder, HugePiecesStayCorrect) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  for (const std::string& s : {std::string(200000, 'a'), std::string(200000, ' '),
                               std::string(100000, '\n'), std::string(50000, '!') + "x", [] {
                                 std::string mixed;
                                 for (int i = 0; i < 30000; ++i) mixed += i % 7 ? " " : "\r\n";
                                 return mixed;
                               }()}) {
    const auto ids = tok->encode(s);
    ASSERT_FALSE(ids.empty());
    EXPECT_LT(ids.size(), s.size());
    EXPECT_EQ(tok->decode(ids), s);
  }
}

TEST(Encoder, RandomBytesNeverCrashAndAreStable) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  std::mt19937_64 rng(test_seed());
  for (int round = 0; round < 300; ++round) {
    std::string s(rng() % 200, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 32 + rng() % 96);
    const auto ids = tok->encode(s);
    for (const int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->vocab_size());
    const std::string once = tok->decode(ids);
    // Normalization is idempotent, so a second round trip changes nothing.
    EXPECT_EQ(tok->decode(tok->encode(once)), once);
  }
}

TEST(Encoder, ConcurrentEncodingMatchesSerial) {
  const auto tok = fixture_tokenizer();
  ASSERT_TRUE(tok);
  const std::vector<std::string> texts = {"The quick brown fox", "按很多人的直觉",
                                          "def f(x):\n  return x", "🥌🪑 한국어",
                                          "  spaces   and\ttabs\n\n"};
  std::vector<std::vector<int32_t>> expected;
  for (const auto& t : texts) expected.push_back(tok->encode(t));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        const size_t k = static_cast<size_t>(i) % texts.size();
        if (tok->encode(texts[k]) != expected[k]) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace ringserve::testing
