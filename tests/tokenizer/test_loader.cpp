// Hostile or unsupported tokenizer.json files give clear errors, never a crash.
#include <gtest/gtest.h>

#include <zlib.h>

#include <fstream>

#include "support/test_support.h"
#include "tiny_tokenizer.h"
#include "tokenizer/file_source.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::testing {
namespace {

using nlohmann::json;
using tokenizer::Tokenizer;

json base() {
  return tiny_tokenizer_json({{"h", "e"}, {"l", "l"}, {"he", "ll"}});
}

// Expects loading to fail with `code` and a message containing `needle`.
void expect_error(const std::string& text, Errc code, const std::string& needle) {
  const auto t = Tokenizer::from_json(text, "hostile.json");
  ASSERT_FALSE(t) << "accepted: " << text.substr(0, 200);
  EXPECT_EQ(t.error().code, code) << t.error().to_string();
  EXPECT_NE(t.error().message.find(needle), std::string::npos) << t.error().to_string();
  EXPECT_NE(t.error().message.find("hostile.json"), std::string::npos);
}

TEST(TokenizerLoader, TinyTokenizerWorksInBothMergeForms) {
  for (const bool arrays : {false, true}) {
    const auto t = Tokenizer::from_json(
        tiny_tokenizer_json({{"h", "e"}, {"l", "l"}, {"he", "ll"}}, {}, arrays).dump(), "tiny");
    ASSERT_TRUE(t) << t.error().to_string();
    const auto ids = (*t)->encode("hello");
    ASSERT_EQ(ids.size(), 2u);  // "hell" + "o"
    EXPECT_EQ((*t)->decode(ids), "hello");
  }
}

TEST(TokenizerLoader, MalformedJson) {
  expect_error("", Errc::kCorruptData, "invalid JSON");
  expect_error("{\"model\": ", Errc::kCorruptData, "invalid JSON");
  expect_error("[1, 2, 3]", Errc::kCorruptData, "not a JSON object");
  expect_error(std::string(100000, '[') + std::string(100000, ']'), Errc::kCorruptData,
               "nested deeper");
  expect_error("{\"a\": \"\xff\xfe\"}", Errc::kCorruptData, "invalid JSON");
}

TEST(TokenizerLoader, MissingOrWrongFields) {
  json j = base();
  j.erase("model");
  expect_error(j.dump(), Errc::kCorruptData, "missing \"model\"");
  j = base();
  j["model"].erase("vocab");
  expect_error(j.dump(), Errc::kCorruptData, "vocab");
  j = base();
  j["model"]["vocab"] = json::object();
  expect_error(j.dump(), Errc::kCorruptData, "vocab is empty");
  j = base();
  j["model"].erase("merges");
  expect_error(j.dump(), Errc::kCorruptData, "merges");
  j = base();
  j["model"]["type"] = "WordPiece";
  expect_error(j.dump(), Errc::kUnsupported, "WordPiece");
  j = base();
  j["added_tokens"] = "nope";
  expect_error(j.dump(), Errc::kCorruptData, "added_tokens");
  j = base();
  j["added_tokens"] = json::array({{{"content", "<x>"}}});
  expect_error(j.dump(), Errc::kCorruptData, "missing \"id\"");
  j = base();
  j["added_tokens"] = json::array({{{"id", 400}, {"content", ""}}});
  expect_error(j.dump(), Errc::kCorruptData, "content");
  j = base();
  j["added_tokens"] = json::array({{{"id", 400}, {"content", "<x>"}, {"special", "yes"}}});
  expect_error(j.dump(), Errc::kCorruptData, "special");
  j = base();
  j["added_tokens"] =
      json::array({{{"id", 400}, {"content", "<x>"}}, {{"id", 400}, {"content", "<y>"}}});
  expect_error(j.dump(), Errc::kCorruptData, "appears twice");
}

TEST(TokenizerLoader, BadIds) {
  for (const json& bad : {json(-1), json(int64_t{1} << 40), json(uint64_t{1} << 63), json("7"),
                          json(1.5), json(nullptr)}) {
    json j = base();
    j["model"]["vocab"]["hello"] = bad;
    expect_error(j.dump(), Errc::kCorruptData, "id");
  }
  json j = base();
  j["model"]["vocab"]["hello"] = 0;  // id 0 already belongs to a byte
  expect_error(j.dump(), Errc::kCorruptData, "used twice");
  j = base();
  j["added_tokens"] = json::array({{{"id", -7}, {"content", "<x>"}}});
  expect_error(j.dump(), Errc::kCorruptData, "out of range");
}

TEST(TokenizerLoader, BadMerges) {
  json j = base();
  j["model"]["merges"].push_back("nospace");
  expect_error(j.dump(), Errc::kCorruptData, "merge 3");
  j = base();
  j["model"]["merges"].push_back(json::array({"a", "b", "c"}));
  expect_error(j.dump(), Errc::kCorruptData, "merge 3");
  j = base();
  j["model"]["merges"].push_back(42);
  expect_error(j.dump(), Errc::kCorruptData, "merge 3");
  j = base();
  j["model"]["merges"].push_back("zz q");  // "zz" is not a token
  expect_error(j.dump(), Errc::kCorruptData, "\"zz\" is not in the vocab");
  j = base();
  j["model"]["merges"].push_back("x y");  // both bytes exist, "xy" does not
  expect_error(j.dump(), Errc::kCorruptData, "\"xy\" is not in the vocab");
}

TEST(TokenizerLoader, UnsupportedComponents) {
  json j = base();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect_error(j.dump(), Errc::kUnsupported, "Lowercase");
  j = base();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(j.dump(), Errc::kUnsupported, "Whitespace");
  j = base();
  j["decoder"] = {{"type", "WordPiece"}};
  expect_error(j.dump(), Errc::kUnsupported, "WordPiece");
  j = base();
  j["model"]["byte_fallback"] = true;
  expect_error(j.dump(), Errc::kUnsupported, "byte_fallback");
  j = base();
  j["model"]["dropout"] = 0.1;
  expect_error(j.dump(), Errc::kUnsupported, "dropout");
  j = base();
  j["pre_tokenizer"] = {
      {"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_error(j.dump(), Errc::kCorruptData, "regex");
  j = base();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}};
  expect_error(j.dump(), Errc::kCorruptData, "Sideways");
}

TEST(TokenizerLoader, Files) {
  TempDir dir;
  auto missing = Tokenizer::load(dir.path() / "absent.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::kNotFound);

  // A gzip file cut in half.
  const std::string json_text = base().dump();
  uLongf cap = compressBound(json_text.size()) + 64;
  std::string gz(cap, '\0');
  z_stream zs{};
  ASSERT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(json_text.data()));
  zs.avail_in = static_cast<uInt>(json_text.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  {
    std::ofstream(dir.path() / "whole.json.gz", std::ios::binary) << gz;
    std::ofstream(dir.path() / "cut.json.gz", std::ios::binary) << gz.substr(0, gz.size() / 2);
  }
  auto whole = Tokenizer::load(dir.path() / "whole.json.gz");
  ASSERT_TRUE(whole) << whole.error().to_string();
  EXPECT_EQ((*whole)->decode((*whole)->encode("hello")), "hello");
  auto cut = Tokenizer::load(dir.path() / "cut.json.gz");
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, Errc::kCorruptData);
  EXPECT_NE(cut.error().message.find("truncated"), std::string::npos) << cut.error().to_string();

  // A zip bomb is cut off at the size limit.
  const std::string zeros(1 << 20, ' ');
  std::string packed(compressBound(zeros.size()), '\0');
  uLongf packed_len = packed.size();
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(packed.data()), &packed_len,
                     reinterpret_cast<const Bytef*>(zeros.data()), zeros.size()),
            Z_OK);
  packed.resize(packed_len);
  auto bomb = tokenizer::gunzip(packed, 4096, "bomb");
  ASSERT_FALSE(bomb);
  EXPECT_EQ(bomb.error().code, Errc::kTooLarge);
}

}  // namespace
}  // namespace ringserve::testing
