#include <gtest/gtest.h>

#include <cstring>

#include "model/safetensors_writer.h"
#include "model/tensor_source.h"
#include "model_test_util.h"
#include "support/test_support.h"

namespace ringserve::model {
namespace {

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

std::span<const std::byte> bytes_of(const std::vector<float>& v) {
  return std::as_bytes(std::span<const float>(v));
}

TEST(SafetensorsWriter, RoundTripsThroughTheReader) {
  testing::TempDir dir;
  auto a = iota_floats(6, 1.0f);
  std::vector<int8_t> b{-1, 2, -3};
  auto w = SafetensorsWriter::create(
      dir.path() / "x.safetensors",
      {{"a", DType::kF32, {2, 3}}, {"b", DType::kI8, {3}}, {"empty", DType::kF32, {0}}},
      {{"format", "test"}});
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_EQ(w->next_tensor(), "a");
  // Chunks may straddle tensors.
  ASSERT_TRUE(w->append(bytes_of(a).first(10)));
  std::vector<std::byte> rest(bytes_of(a).begin() + 10, bytes_of(a).end());
  for (int8_t v : b) rest.push_back(static_cast<std::byte>(v));
  ASSERT_TRUE(w->append(rest));
  EXPECT_FALSE(
      std::filesystem::exists(dir.path() / "x.safetensors"));  // only .partial until finish
  ASSERT_TRUE(w->finish());

  auto src = TensorSource::open_file(dir.path() / "x.safetensors");
  ASSERT_TRUE(src) << src.error().to_string();
  EXPECT_EQ(src->metadata().at("format"), "test");
  auto ta = src->get("a");
  ASSERT_TRUE(ta);
  EXPECT_EQ(std::vector<int64_t>(ta->shape.begin(), ta->shape.end()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(ta->bytes.data(), a.data(), 24), 0);
  auto tb = src->get("b");
  ASSERT_TRUE(tb);
  EXPECT_EQ(tb->dtype, DType::kI8);
  EXPECT_EQ(std::memcmp(tb->bytes.data(), b.data(), 3), 0);
  EXPECT_TRUE(src->find("empty"));
  EXPECT_EQ(src->total_bytes(), 27u);
  auto missing = src->get("nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::kNotFound);
  EXPECT_NE(missing.error().message.find("x.safetensors"), std::string::npos);
  EXPECT_NE(missing.error().message.find("nope"), std::string::npos);
}

TEST(SafetensorsWriter, DataSectionIsEightByteAligned) {
  testing::TempDir dir;
  for (const char* name : {"a", "ab", "abc", "abcd", "abcdefghi"}) {
    auto w = SafetensorsWriter::create(dir.path() / "x.safetensors", {{name, DType::kU8, {1}}}, {});
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->write_tensor(name, std::vector<std::byte>(1)));
    ASSERT_TRUE(w->finish());
    auto bytes = testing::read_file(dir.path() / "x.safetensors");
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ((8 + n) % 8, 0u) << name;
  }
}

TEST(SafetensorsWriter, RefusesMisuse) {
  testing::TempDir dir;
  auto path = dir.path() / "x.safetensors";
  EXPECT_FALSE(
      SafetensorsWriter::create(path, {{"a", DType::kU8, {1}}, {"a", DType::kU8, {1}}}, {}));
  EXPECT_FALSE(SafetensorsWriter::create(path, {{"a", DType::kU8, {-1}}}, {}));
  EXPECT_FALSE(SafetensorsWriter::create(path, {{"", DType::kU8, {1}}}, {}));
  EXPECT_FALSE(SafetensorsWriter::create(path, {{"a", DType::kF64, {INT64_MAX, INT64_MAX}}}, {}));
  {
    auto w = SafetensorsWriter::create(path, {{"a", DType::kU8, {2}}, {"b", DType::kU8, {2}}}, {});
    ASSERT_TRUE(w);
    EXPECT_FALSE(w->write_tensor("b", std::vector<std::byte>(2)));  // out of order
    EXPECT_FALSE(w->write_tensor("a", std::vector<std::byte>(3)));  // wrong size
    EXPECT_FALSE(w->write_tensor("zzz", std::vector<std::byte>(2)));
    ASSERT_TRUE(w->write_tensor("a", std::vector<std::byte>(2)));
    EXPECT_FALSE(w->append(std::vector<std::byte>(3)));  // past the end
    EXPECT_FALSE(w->finish());                           // b incomplete
  }
  {
    auto w = SafetensorsWriter::create(path, {{"a", DType::kU8, {2}}}, {});
    ASSERT_TRUE(w);
  }  // abandoned: nothing left behind
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x.safetensors.partial"));
}

TEST(SafetensorsWriter, RenamesIntoPlaceAtomically) {
  testing::TempDir dir;
  auto path = dir.path() / "x.safetensors";
  auto w = SafetensorsWriter::create(path, {{"a", DType::kU8, {2}}}, {});
  ASSERT_TRUE(w);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "x.safetensors.partial"));
  ASSERT_TRUE(w->write_tensor("a", std::vector<std::byte>(2)));
  ASSERT_TRUE(w->finish());
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x.safetensors.partial"));
}

// A two-shard checkpoint written with our writer and the index file.
void write_two_shards(const std::filesystem::path& dir) {
  auto a = iota_floats(4, 0.0f), b = iota_floats(2, 10.0f), c = iota_floats(3, 20.0f);
  auto w1 = SafetensorsWriter::create(dir / "model-00001-of-00002.safetensors",
                                      {{"a", DType::kF32, {4}}, {"b", DType::kF32, {2}}},
                                      {{"format", "pt"}});
  ASSERT_TRUE(w1);
  ASSERT_TRUE(w1->write_tensor("a", bytes_of(a)));
  ASSERT_TRUE(w1->write_tensor("b", bytes_of(b)));
  ASSERT_TRUE(w1->finish());
  auto w2 = SafetensorsWriter::create(dir / "model-00002-of-00002.safetensors",
                                      {{"c", DType::kF32, {3}}}, {{"format", "pt"}});
  ASSERT_TRUE(w2);
  ASSERT_TRUE(w2->write_tensor("c", bytes_of(c)));
  ASSERT_TRUE(w2->finish());
  ASSERT_TRUE(write_safetensors_index(dir / "model.safetensors.index.json",
                                      {{"a", "model-00001-of-00002.safetensors"},
                                       {"b", "model-00001-of-00002.safetensors"},
                                       {"c", "model-00002-of-00002.safetensors"}},
                                      36));
}

TEST(TensorSource, OpensShardedCheckpoint) {
  testing::TempDir dir;
  write_two_shards(dir.path());
  auto src = TensorSource::open_dir(dir.path());
  ASSERT_TRUE(src) << src.error().to_string();
  EXPECT_EQ(src->tensors().size(), 3u);
  auto c = src->get("c");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->file, "model-00002-of-00002.safetensors");
  float v;
  std::memcpy(&v, c->bytes.data() + 8, 4);
  EXPECT_EQ(v, 22.0f);
  EXPECT_NE(src->description().find("2 shards"), std::string::npos);
}

TEST(TensorSource, IndexNamingAMissingTensorIsAnError) {
  testing::TempDir dir;
  write_two_shards(dir.path());
  ASSERT_TRUE(write_safetensors_index(
      dir.path() / "model.safetensors.index.json",
      {{"a", "model-00001-of-00002.safetensors"}, {"ghost", "model-00002-of-00002.safetensors"}},
      0));
  auto src = TensorSource::open_dir(dir.path());
  ASSERT_FALSE(src);
  EXPECT_NE(src.error().message.find("ghost"), std::string::npos) << src.error().message;
  EXPECT_NE(src.error().message.find("model-00002-of-00002.safetensors"), std::string::npos);
}

TEST(TensorSource, IndexMayNotEscapeTheDirectory) {
  testing::TempDir dir;
  write_two_shards(dir.path());
  for (const char* bad : {"../model-00001-of-00002.safetensors", "/etc/passwd", "..", ""}) {
    ASSERT_TRUE(
        write_safetensors_index(dir.path() / "model.safetensors.index.json", {{"a", bad}}, 0));
    auto src = TensorSource::open_dir(dir.path());
    ASSERT_FALSE(src) << bad;
    EXPECT_NE(src.error().message.find("plain file name"), std::string::npos)
        << src.error().message;
  }
}

TEST(TensorSource, CorruptIndexAndMissingShard) {
  testing::TempDir dir;
  test::write_text(dir.path() / "model.safetensors.index.json", "{\"weight_map\": [1]}");
  auto src = TensorSource::open_dir(dir.path());
  ASSERT_FALSE(src);
  EXPECT_NE(src.error().message.find("weight_map"), std::string::npos);
  test::write_text(dir.path() / "model.safetensors.index.json", "not json");
  EXPECT_FALSE(TensorSource::open_dir(dir.path()));
  ASSERT_TRUE(write_safetensors_index(dir.path() / "model.safetensors.index.json",
                                      {{"a", "gone.safetensors"}}, 0));
  src = TensorSource::open_dir(dir.path());
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, Errc::kNotFound);
  EXPECT_NE(src.error().message.find("gone.safetensors"), std::string::npos);
}

TEST(TensorSource, TruncatedFileOnDiskNamesFileAndTensor) {
  testing::TempDir dir;
  auto fixture = testing::read_file(testing::fixture_path("models/tiny-qwen2/model.safetensors"));
  std::vector<std::byte> bytes(
      reinterpret_cast<const std::byte*>(fixture.data()),
      reinterpret_cast<const std::byte*>(fixture.data()) + fixture.size() - 100);
  test::write_bytes(dir.path() / "model.safetensors", bytes);
  auto src = TensorSource::open_dir(dir.path());
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, Errc::kCorruptData);
  EXPECT_NE(src.error().message.find("model.safetensors"), std::string::npos)
      << src.error().message;
  EXPECT_NE(src.error().message.find("tensor "), std::string::npos) << src.error().message;
  EXPECT_NE(src.error().message.find("truncated"), std::string::npos) << src.error().message;
}

TEST(TensorSource, EmptyDirectoryAndNonFile) {
  testing::TempDir dir;
  auto src = TensorSource::open_dir(dir.path());
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().code, Errc::kNotFound);
  EXPECT_FALSE(TensorSource::open_file(dir.path()));
  EXPECT_FALSE(TensorSource::open_file(dir.path() / "missing.safetensors"));
}

}  // namespace
}  // namespace ringserve::model
