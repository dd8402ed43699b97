#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "io/aligned_buffer.h"
#include "io/file_reader.h"
#include "io/open_file.h"
#include "io/safetensors_range.h"
#include "io_test_util.h"
#include "support/test_support.h"

namespace ringserve::io {
namespace {

using testing::forced_paths;
using testing::PathCase;

class ReaderPaths : public ::testing::TestWithParam<PathCase> {
 protected:
  void SetUp() override {
    seed_ = ringserve::testing::test_seed();
    // Not a multiple of 4096, so the tail block is partial.
    content_ = testing::random_bytes(1'000'003, seed_);
    path_ = dir_.path() / "data.bin";
    testing::write_file(path_, content_);
    ReaderOptions o;
    o.backend = GetParam().backend;
    o.direct = GetParam().direct;
    auto r = FileReader::open(path_, o);
    if (!r && r.error().code == Errc::kUnsupported)
      GTEST_SKIP() << "path unavailable here: " << r.error().to_string();
    ASSERT_TRUE(r) << r.error().to_string();
    reader_ = std::move(*r);
  }

  // Reads [offset, offset + length) through `count` slots of `slot_bytes`,
  // checking the chunk contract as it goes.
  void check_range(uint64_t offset, uint64_t length, size_t slot_bytes, size_t count) {
    std::vector<AlignedBuffer> buffers;
    std::vector<std::span<std::byte>> slots;
    for (size_t i = 0; i < count; ++i) {
      buffers.push_back(*AlignedBuffer::allocate(slot_bytes));
      std::memset(buffers.back().data(), 0xAB, slot_bytes);  // poison
      slots.push_back(buffers.back().span());
    }
    std::vector<std::byte> got;
    uint64_t next_index = 0, reclaims = 0;
    auto stats = reader_.read(
        offset, length, slots,
        [&](const Chunk& c) {
          EXPECT_EQ(c.index, next_index++);
          EXPECT_EQ(c.offset, offset + got.size());
          EXPECT_LT(c.slot, count);
          EXPECT_GE(c.bytes.data(), slots[c.slot].data());
          EXPECT_LE(c.bytes.data() + c.bytes.size(), slots[c.slot].data() + slot_bytes);
          got.insert(got.end(), c.bytes.begin(), c.bytes.end());
          return ok();
        },
        [&](size_t slot) {
          EXPECT_LT(slot, count);
          ++reclaims;
          return ok();
        });
    ASSERT_TRUE(stats) << stats.error().to_string();
    ASSERT_EQ(got.size(), length) << "offset " << offset;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), content_.begin() + offset))
        << "offset " << offset << " length " << length << " slot " << slot_bytes << " seed "
        << seed_;
    EXPECT_EQ(stats->bytes, length);
    EXPECT_EQ(stats->method, GetParam().expected);
    EXPECT_EQ(stats->chunks, next_index);
    EXPECT_EQ(reclaims, next_index > count ? next_index - count : 0);
  }

  ringserve::testing::TempDir dir_;
  std::filesystem::path path_;
  std::vector<std::byte> content_;
  FileReader reader_;
  uint64_t seed_ = 0;
};

TEST_P(ReaderPaths, ReportsTheForcedMethod) {
  EXPECT_EQ(reader_.method(), GetParam().expected);
}

TEST_P(ReaderPaths, WholeFile) {
  check_range(0, content_.size(), 64 << 10, 4);
  check_range(0, content_.size(), 4096, 1);
  check_range(0, content_.size(), 1 << 20, 3);  // one chunk larger than needed
}

TEST_P(ReaderPaths, RandomRangesMatchPlainReads) {
  std::mt19937_64 rng(seed_ ^ 0x5eed);
  const size_t slot_sizes[] = {4096, 8192, 12288, 65536};
  for (int i = 0; i < 120; ++i) {
    const uint64_t offset = rng() % content_.size();
    const uint64_t max_len = content_.size() - offset;
    // Mostly short ranges, sometimes to the end of the file.
    const uint64_t length = (i % 7 == 0) ? max_len : rng() % std::min<uint64_t>(max_len + 1, 70000);
    check_range(offset, length, slot_sizes[rng() % 4], 1 + rng() % 4);
  }
}

TEST_P(ReaderPaths, ChunkBoundaryEdges) {
  for (uint64_t offset : {0ull, 1ull, 4095ull, 4096ull, 4097ull, 8191ull}) {
    for (uint64_t length : {1ull, 4095ull, 4096ull, 4097ull, 8192ull, 12289ull}) {
      check_range(offset, length, 4096, 2);
      check_range(offset, length, 8192, 3);
    }
  }
  // The last byte, and the final partial block.
  check_range(content_.size() - 1, 1, 4096, 1);
  check_range(content_.size() - 5000, 5000, 4096, 2);
}

TEST_P(ReaderPaths, EmptyRangeCallsNothing) {
  AlignedBuffer b = *AlignedBuffer::allocate(4096);
  std::span<std::byte> slots[] = {b.span()};
  for (uint64_t offset : {uint64_t{0}, uint64_t{777}, uint64_t{content_.size()}}) {
    auto stats = reader_.read(offset, 0, slots, [](const Chunk&) {
      ADD_FAILURE() << "handler called for an empty range";
      return ok();
    });
    ASSERT_TRUE(stats) << stats.error().to_string();
    EXPECT_EQ(stats->bytes, 0u);
    EXPECT_EQ(stats->chunks, 0u);
  }
}

TEST_P(ReaderPaths, ReadIntoAnyBuffer) {
  std::vector<std::byte> dest(300'001);
  auto stats = reader_.read_into(12'345, dest, 16 << 10, 3);
  ASSERT_TRUE(stats) << stats.error().to_string();
  EXPECT_TRUE(std::equal(dest.begin(), dest.end(), content_.begin() + 12'345));
  std::vector<std::byte> none;
  EXPECT_TRUE(reader_.read_into(0, none));
}

TEST_P(ReaderPaths, HandlerErrorStopsTheRead) {
  AlignedBuffer a = *AlignedBuffer::allocate(4096), b = *AlignedBuffer::allocate(4096);
  std::span<std::byte> slots[] = {a.span(), b.span()};
  int calls = 0;
  auto stats = reader_.read(0, 100'000, slots, [&](const Chunk&) {
    return ++calls == 3 ? Status(make_error(Errc::kCancelled, "enough")) : ok();
  });
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, Errc::kCancelled);
  EXPECT_EQ(calls, 3);
  // The reader is still usable afterwards.
  check_range(5, 20'000, 4096, 2);
}

TEST_P(ReaderPaths, ReclaimErrorStopsTheRead) {
  AlignedBuffer a = *AlignedBuffer::allocate(4096);
  std::span<std::byte> slots[] = {a.span()};
  auto stats = reader_.read(
      0, 50'000, slots, [](const Chunk&) { return ok(); },
      [](size_t) { return Status(make_error(Errc::kIoError, "copy failed")); });
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, Errc::kIoError);
}

TEST_P(ReaderPaths, SafetensorsDataSection) {
  // 8-byte little-endian header length, header, data.
  const std::string header = R"({"t":{"dtype":"U8","shape":[5],"data_offsets":[0,5]}})";
  std::vector<std::byte> file(8 + header.size() + 5);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) file[i] = static_cast<std::byte>(n >> (8 * i));
  std::memcpy(file.data() + 8, header.data(), header.size());
  for (int i = 0; i < 5; ++i) file[8 + header.size() + i] = static_cast<std::byte>(i + 1);
  const auto path = dir_.path() / "m.safetensors";
  testing::write_file(path, file);
  ReaderOptions o{GetParam().backend, GetParam().direct, 2};
  auto reader = FileReader::open(path, o);
  ASSERT_TRUE(reader) << reader.error().to_string();
  auto range = safetensors_data_range(*reader);
  ASSERT_TRUE(range) << range.error().to_string();
  EXPECT_EQ(range->offset, 8 + header.size());
  EXPECT_EQ(range->length, 5u);
  std::vector<std::byte> data(5);
  ASSERT_TRUE(reader->read_into(range->offset, data));
  EXPECT_EQ(data[4], std::byte{5});
}

std::string path_name(const ::testing::TestParamInfo<PathCase>& info) {
  std::string name = method_name(info.param.expected);
  std::string out;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
  return out;
}

INSTANTIATE_TEST_SUITE_P(Forced, ReaderPaths, ::testing::ValuesIn(forced_paths()), path_name);

// Drops the file's clean pages from the page cache.
void evict(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

TEST(ReaderAuto, CachedFilesAreReadBufferedColdOnesDirect) {
  ringserve::testing::TempDir dir;
  const auto path = dir.path() / "f";
  testing::write_file(path, testing::random_bytes(1 << 20, 3));
  {
    auto opened = open_for_read(path, false);
    ASSERT_TRUE(opened);
    // Just written: in the page cache.
    EXPECT_GT(page_cache_fraction(opened->fd.get(), opened->size), 0.9);
    auto reader = FileReader::open(path);
    ASSERT_TRUE(reader);
    EXPECT_EQ(reader->method(), Method::kPreadBuffered);
  }
  evict(path);
  auto opened = open_for_read(path, false);
  ASSERT_TRUE(opened);
  const double cached = page_cache_fraction(opened->fd.get(), opened->size);
  if (cached >= 0.5) GTEST_SKIP() << "the kernel kept the pages (" << cached << ")";
  auto reader = FileReader::open(path);
  ASSERT_TRUE(reader);
  if (!uses_direct_io(reader->method()))
    GTEST_SKIP() << "no O_DIRECT on this filesystem: " << method_name(reader->method());
  EXPECT_TRUE(reader->method() == Method::kIoUringDirect ||
              reader->method() == Method::kPreadDirect)
      << method_name(reader->method());
}

// Over 256 MiB the fraction is sampled: a file whose first third alone is
// cached must read about a third, not 0 or 1. Sparse, so the test writes
// almost nothing; reading a hole still puts its pages in the cache.
TEST(PageCacheFraction, SampledForLargeFiles) {
  ringserve::testing::TempDir dir;
  const auto path = dir.path() / "sparse";
  const uint64_t size = uint64_t{384} << 20;
  {
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    ::close(fd);
  }
  evict(path);
  auto opened = open_for_read(path, false);
  ASSERT_TRUE(opened);
  const double before = page_cache_fraction(opened->fd.get(), opened->size);
  if (before > 0.05) GTEST_SKIP() << "the kernel kept the pages (" << before << ")";
  std::vector<char> buf(size_t{1} << 20);
  for (uint64_t off = 0; off < size / 3; off += buf.size())
    ASSERT_EQ(::pread(opened->fd.get(), buf.data(), buf.size(), static_cast<off_t>(off)),
              static_cast<ssize_t>(buf.size()));
  const double third = page_cache_fraction(opened->fd.get(), opened->size);
  if (third < 0) GTEST_SKIP() << "mincore refused";
  EXPECT_NEAR(third, 1.0 / 3, 0.05);
}

TEST(ReaderAuto, PicksAWorkingPath) {
  ringserve::testing::TempDir dir;
  const auto content = testing::random_bytes(50'000, 7);
  testing::write_file(dir.path() / "f", content);
  auto reader = FileReader::open(dir.path() / "f");
  ASSERT_TRUE(reader) << reader.error().to_string();
  std::vector<std::byte> dest(content.size());
  auto stats = reader->read_into(0, dest);
  ASSERT_TRUE(stats) << stats.error().to_string();
  EXPECT_EQ(dest, content);
  std::cout << "auto path here: " << method_name(stats->method) << "\n";
}

}  // namespace
}  // namespace ringserve::io
