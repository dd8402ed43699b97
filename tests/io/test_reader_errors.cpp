#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "io/aligned_buffer.h"
#include "io/file_reader.h"
#include "io/safetensors_range.h"
#include "io_test_util.h"
#include "support/test_support.h"

namespace ringserve::io {
namespace {

Status ignore(const Chunk&) {
  return ok();
}

struct ReaderErrors : ::testing::Test {
  ringserve::testing::TempDir dir;
  std::filesystem::path file = dir.path() / "f.bin";
  std::vector<std::byte> content = testing::random_bytes(40'000, 11);
  void SetUp() override { testing::write_file(file, content); }
};

TEST_F(ReaderErrors, MissingFile) {
  auto r = FileReader::open(dir.path() / "nope");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kNotFound);
  EXPECT_NE(r.error().message.find("nope"), std::string::npos);
}

TEST_F(ReaderErrors, Directory) {
  for (DirectIo d : {DirectIo::kAuto, DirectIo::kOff}) {
    auto r = FileReader::open(dir.path(), ReaderOptions{Backend::kPread, d, 1});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << r.error().to_string();
    EXPECT_NE(r.error().message.find("directory"), std::string::npos);
  }
}

TEST_F(ReaderErrors, Unreadable) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  ASSERT_EQ(::chmod(file.c_str(), 0), 0);
  auto r = FileReader::open(file);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
}

TEST_F(ReaderErrors, RangePastTheEnd) {
  auto r = *FileReader::open(file);
  AlignedBuffer b = *AlignedBuffer::allocate(4096);
  std::span<std::byte> slots[] = {b.span()};
  for (auto [offset, length] : {std::pair<uint64_t, uint64_t>{0, 40'001},
                                {40'000, 1},
                                {50'000, 0},
                                {1, UINT64_MAX},
                                {UINT64_MAX, 2}}) {
    auto s = r.read(offset, length, slots, ignore);
    ASSERT_FALSE(s) << offset << "+" << length;
    EXPECT_EQ(s.error().code, Errc::kInvalidArgument);
    EXPECT_NE(s.error().message.find("past the end of the file (40000 bytes)"), std::string::npos)
        << s.error().message;
  }
}

TEST_F(ReaderErrors, FileTruncatedWhileReading) {
  for (const auto& path : testing::forced_paths()) {
    auto r = FileReader::open(file, ReaderOptions{path.backend, path.direct, 2});
    if (!r && r.error().code == Errc::kUnsupported) continue;
    ASSERT_TRUE(r) << r.error().to_string();
    std::filesystem::resize_file(file, 10'000);  // after open: size() still says 40000
    std::vector<std::byte> dest(30'000);
    auto s = r->read_into(0, dest, 4096, 2);
    ASSERT_FALSE(s) << method_name(path.expected);
    EXPECT_EQ(s.error().code, Errc::kCorruptData) << s.error().to_string();
    EXPECT_NE(s.error().message.find("truncated"), std::string::npos);
    testing::write_file(file, content);
  }
}

TEST_F(ReaderErrors, BadBuffers) {
  auto r = *FileReader::open(file);
  AlignedBuffer a = *AlignedBuffer::allocate(8192), b = *AlignedBuffer::allocate(4096);
  auto check = [&](std::vector<std::span<std::byte>> slots, const char* what) {
    auto s = r.read(0, 100, slots, ignore);
    ASSERT_FALSE(s) << what;
    EXPECT_EQ(s.error().code, Errc::kInvalidArgument) << what;
  };
  check({}, "none");
  check({a.span().subspan(1, 4096)}, "unaligned address");
  check({a.span().first(4000)}, "size not a multiple of 4096");
  check({a.span(), b.span()}, "different sizes");
  check({a.span().first(0)}, "empty");
  EXPECT_FALSE(AlignedBuffer::allocate(0));
  EXPECT_FALSE(AlignedBuffer::allocate(10, 3000));
}

TEST_F(ReaderErrors, ForcedDirectOnAFileSystemWithoutIt) {
  // /proc files refuse O_DIRECT (and are not regular data files either):
  // forcing it fails cleanly; auto falls back or refuses, never crashes.
  auto forced =
      FileReader::open("/proc/self/status", ReaderOptions{Backend::kPread, DirectIo::kOn, 1});
  ASSERT_FALSE(forced);
  EXPECT_TRUE(forced.error().code == Errc::kUnsupported ||
              forced.error().code == Errc::kInvalidArgument)
      << forced.error().to_string();
}

TEST_F(ReaderErrors, SafetensorsHeaders) {
  auto write_header = [&](uint64_t n, size_t total) {
    std::vector<std::byte> bytes(total);
    for (int i = 0; i < 8 && i < static_cast<int>(total); ++i)
      bytes[i] = static_cast<std::byte>(n >> (8 * i));
    testing::write_file(file, bytes);
    return *FileReader::open(file);
  };
  {
    auto r = write_header(0, 5);  // shorter than the length prefix
    EXPECT_EQ(safetensors_data_range(r).error().code, Errc::kCorruptData);
  }
  {
    auto r = write_header(1000, 100);  // header past the end: truncated file
    auto e = safetensors_data_range(r);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code, Errc::kCorruptData);
    EXPECT_NE(e.error().message.find("past the end"), std::string::npos);
  }
  {
    auto r = write_header(UINT64_MAX, 64);  // hostile length
    EXPECT_EQ(safetensors_data_range(r).error().code, Errc::kTooLarge);
  }
  {
    auto r = write_header(92, 100);  // header fills the file: empty data section
    auto range = safetensors_data_range(r);
    ASSERT_TRUE(range);
    EXPECT_EQ(range->offset, 100u);
    EXPECT_EQ(range->length, 0u);
  }
}

TEST(Method, Names) {
  EXPECT_STREQ(method_name(Method::kIoUringDirect), "io_uring+O_DIRECT");
  EXPECT_STREQ(method_name(Method::kPreadBuffered), "pread (page cache)");
  EXPECT_TRUE(uses_io_uring(make_method(true, false)));
  EXPECT_TRUE(uses_direct_io(make_method(false, true)));
  EXPECT_FALSE(uses_direct_io(make_method(true, false)));
}

}  // namespace
}  // namespace ringserve::io
