#include <gtest/gtest.h>

#include <string>

#include "model/safetensors.h"
#include "model_test_util.h"

namespace ringserve::model {
namespace {

using test::safetensors_bytes;

Expected<SafetensorsHeader> parse(const std::vector<std::byte>& file) {
  return parse_safetensors_header(file, file.size(), "weights.safetensors");
}

TEST(SafetensorsHeader, ParsesValidHeader) {
  auto file = safetensors_bytes(
      R"({"__metadata__": {"format": "pt"}, "b": {"dtype": "I8", "shape": [3], "data_offsets": [8, 11]},
          "a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
          "s": {"dtype": "F32", "shape": [], "data_offsets": [11, 15]}})",
      15);
  auto h = parse(file);
  ASSERT_TRUE(h) << h.error().to_string();
  ASSERT_EQ(h->tensors.size(), 3u);
  EXPECT_EQ(h->tensors[0].name, "a");  // sorted by offset
  EXPECT_EQ(h->tensors[0].dtype, DType::kBF16);
  EXPECT_EQ(h->tensors[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(h->tensors[1].name, "b");
  EXPECT_EQ(h->tensors[2].numel(), 1u);
  EXPECT_EQ(h->metadata.at("format"), "pt");
  EXPECT_EQ(h->data_size, 15u);
  EXPECT_EQ(h->data_offset, file.size() - 15);
}

TEST(SafetensorsHeader, AcceptsSpacePaddingAndEmptyHeader) {
  EXPECT_TRUE(parse(safetensors_bytes(
      R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}     )", 1)));
  auto h = parse(safetensors_bytes("{}", 0));
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->tensors.empty());
}

struct Hostile {
  const char* what;
  std::vector<std::byte> file;
  Errc code;
  const char* expect_in_message;  // besides the file name
};

std::vector<Hostile> hostile_cases() {
  const std::string ok_entry = R"("w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})";
  std::string deep(100000, '[');
  std::vector<Hostile> v;
  v.push_back({"empty file", {}, Errc::kCorruptData, "too short"});
  v.push_back({"seven bytes", std::vector<std::byte>(7), Errc::kCorruptData, "too short"});
  v.push_back({"huge header length", safetensors_bytes("{}", 0, 1ull << 40), Errc::kTooLarge,
               "header length"});
  v.push_back({"max header length", safetensors_bytes("{}", 0, UINT64_MAX - 1), Errc::kTooLarge,
               "header length"});
  v.push_back(
      {"header past end", safetensors_bytes("{}", 0, 1000), Errc::kCorruptData, "truncated"});
  v.push_back({"non-JSON", safetensors_bytes("{this is not json}", 0), Errc::kCorruptData,
               "not valid JSON"});
  v.push_back({"not an object", safetensors_bytes("[1, 2]", 0), Errc::kCorruptData, "JSON object"});
  v.push_back({"binary", safetensors_bytes(std::string("\x00\xff\xfe", 3), 0), Errc::kCorruptData,
               "JSON object"});
  v.push_back(
      {"deeply nested", safetensors_bytes("{\"a\":" + deep, 0), Errc::kCorruptData, "nested"});
  v.push_back({"nested inside a string is fine but unterminated",
               safetensors_bytes(R"({"a[[[[[[[[[[[[[": )", 0), Errc::kCorruptData, "JSON"});
  v.push_back({"data truncated", safetensors_bytes("{" + ok_entry + "}", 7), Errc::kCorruptData,
               "tensor w"});
  v.push_back(
      {"huge offsets",
       safetensors_bytes(
           R"({"w": {"dtype": "U8", "shape": [8], "data_offsets": [18446744073709551607, 18446744073709551615]}})",
           8),
       Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"end before begin",
       safetensors_bytes(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [8, 0]}})", 8),
       Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"negative offset",
       safetensors_bytes(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [-1, 0]}})", 8),
       Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"float offset",
       safetensors_bytes(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0.5, 1]}})", 8),
       Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"three offsets",
       safetensors_bytes(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2]}})", 8),
       Errc::kCorruptData, "tensor w"});
  v.push_back({"overlap",
               safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                                 12),
               Errc::kCorruptData, "overlap"});
  v.push_back({"identical ranges",
               safetensors_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                     "b": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]}})",
                                 8),
               Errc::kCorruptData, "overlap"});
  v.push_back(
      {"wrong dtype size",
       safetensors_bytes(R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 8]}})", 8),
       Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"shape/size mismatch",
       safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [3, 3], "data_offsets": [0, 8]}})", 8),
       Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"shape overflow",
       safetensors_bytes(
           R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 8]}})",
           8),
       Errc::kCorruptData, "overflow"});
  v.push_back(
      {"bytes overflow",
       safetensors_bytes(
           R"({"w": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 8]}})", 8),
       Errc::kCorruptData, "overflow"});
  v.push_back(
      {"negative dim",
       safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8),
       Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"string dim",
       safetensors_bytes(R"({"w": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}})", 8),
       Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"rank 9",
       safetensors_bytes(
           R"({"w": {"dtype": "U8", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 1]}})", 8),
       Errc::kCorruptData, "rank"});
  v.push_back(
      {"unknown dtype",
       safetensors_bytes(R"({"w": {"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 8]}})", 8),
       Errc::kUnsupported, "tensor w"});
  v.push_back(
      {"lower-case dtype",
       safetensors_bytes(R"({"w": {"dtype": "f32", "shape": [2], "data_offsets": [0, 8]}})", 8),
       Errc::kUnsupported, "tensor w"});
  v.push_back({"missing dtype",
               safetensors_bytes(R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", 8),
               Errc::kCorruptData, "tensor w"});
  v.push_back({"missing shape",
               safetensors_bytes(R"({"w": {"dtype": "F32", "data_offsets": [0, 8]}})", 8),
               Errc::kCorruptData, "tensor w"});
  v.push_back({"missing offsets", safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [2]}})", 8),
               Errc::kCorruptData, "tensor w"});
  v.push_back(
      {"entry not object", safetensors_bytes(R"({"w": 5})", 8), Errc::kCorruptData, "tensor w"});
  v.push_back({"duplicate names",
               safetensors_bytes(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                     "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                 8),
               Errc::kCorruptData, "tensor w"});
  v.push_back({"metadata not strings", safetensors_bytes(R"({"__metadata__": {"format": 1}})", 0),
               Errc::kCorruptData, "__metadata__"});
  v.push_back(
      {"empty name",
       safetensors_bytes(R"({"": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}})", 0),
       Errc::kCorruptData, "name"});
  return v;
}

TEST(SafetensorsHeader, HostileInputsGiveClearErrors) {
  for (const auto& c : hostile_cases()) {
    auto h = parse(c.file);
    ASSERT_FALSE(h) << c.what;
    EXPECT_EQ(h.error().code, c.code) << c.what << ": " << h.error().to_string();
    EXPECT_NE(h.error().message.find("weights.safetensors"), std::string::npos)
        << c.what << ": " << h.error().message;
    EXPECT_NE(h.error().message.find(c.expect_in_message), std::string::npos)
        << c.what << ": " << h.error().message;
  }
}

TEST(SafetensorsHeader, EveryTruncationOfAValidFileIsAnErrorOrInBounds) {
  auto file = safetensors_bytes(
      R"({"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
          "b": {"dtype": "I8", "shape": [3], "data_offsets": [8, 11]}})",
      11);
  for (size_t n = 0; n < file.size(); ++n) {
    std::vector<std::byte> cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(parse(cut)) << "truncated to " << n;
  }
  EXPECT_TRUE(parse(file));
}

TEST(SafetensorsHeader, HostileNamesAreSanitizedInMessages) {
  auto file = safetensors_bytes(
      "{\"bad\\u0007\\u001b[31mname\": {\"dtype\": \"F32\", \"shape\": [9], \"data_offsets\": [0, "
      "8]}}",
      8);
  auto h = parse(file);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().message.find('\x1b'), std::string::npos);
  EXPECT_EQ(h.error().message.find('\x07'), std::string::npos);
}

}  // namespace
}  // namespace ringserve::model
