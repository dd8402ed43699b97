// Single-threaded ring semantics: order, contents, empty, full, wrap-around
// with odd sizes, limits.
#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "ring_fixture.h"
#include "support/test_support.h"

namespace ringserve::protocol {
namespace {

using testing::LocalRing;

std::vector<uint8_t> bytes_of(std::string_view s) {
  return {s.begin(), s.end()};
}

TEST(RingBasic, EmptyRingHasNothingToRead) {
  LocalRing ring(1024);
  auto reader = ring.reader();
  std::vector<uint8_t> out{1, 2, 3};
  auto got = reader.try_read(out);
  ASSERT_TRUE(got);
  EXPECT_FALSE(*got);
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 3})) << "an empty read must not touch the buffer";
}

TEST(RingBasic, RecordsComeOutInOrderWithTheirBytes) {
  LocalRing ring(1024);
  auto writer = ring.writer();
  auto reader = ring.reader();
  const std::vector<std::vector<uint8_t>> records = {
      bytes_of("a"), {}, bytes_of("hello, ring"), bytes_of("0123456"), bytes_of("01234567")};
  for (const auto& r : records) ASSERT_TRUE(*writer.try_write(r));
  std::vector<uint8_t> out;
  for (const auto& r : records) {
    ASSERT_TRUE(*reader.try_read(out));
    EXPECT_EQ(out, r);
  }
  EXPECT_FALSE(*reader.try_read(out));
}

TEST(RingBasic, HeadAndTailAreByteCountsOf8ByteAlignedRecords) {
  LocalRing ring(1024);
  auto writer = ring.writer();
  auto reader = ring.reader();
  ASSERT_TRUE(*writer.try_write(bytes_of("abc")));       // 8 header + 3 -> 16
  ASSERT_TRUE(*writer.try_write(bytes_of("12345678")));  // 8 + 8 -> 16
  EXPECT_EQ(ring.control().head, 32u);
  std::vector<uint8_t> out;
  ASSERT_TRUE(*reader.try_read(out));
  EXPECT_EQ(ring.control().tail, 16u);
}

TEST(RingBasic, FullRingRefusesUntilTheReaderFreesSpace) {
  LocalRing ring(1024);
  auto writer = ring.writer();
  auto reader = ring.reader();
  const std::vector<uint8_t> record(56, 0xab);  // 64 bytes with its header
  int written = 0;
  while (*writer.try_write(record)) ++written;
  EXPECT_EQ(written, 1024 / 64);
  auto again = writer.try_write(record);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "a full ring applies backpressure, never overwrites";
  std::vector<uint8_t> out;
  ASSERT_TRUE(*reader.try_read(out));
  EXPECT_TRUE(*writer.try_write(record));
  int read = 0;
  while (*reader.try_read(out)) {
    EXPECT_EQ(out, record);
    ++read;
  }
  EXPECT_EQ(read, written);
}

TEST(RingBasic, LargestPayloadFitsAtEveryWrapPosition) {
  LocalRing ring(512);
  auto writer = ring.writer();
  auto reader = ring.reader();
  EXPECT_EQ(writer.max_payload(), 512u / 2 - 8);
  const std::vector<uint8_t> big(writer.max_payload(), 0x11);
  std::vector<uint8_t> out;
  for (int shift = 0; shift < 64; ++shift) {
    // Move the write position by one small record, then drain.
    ASSERT_TRUE(*writer.try_write(std::vector<uint8_t>(static_cast<size_t>(shift % 13), 7)));
    ASSERT_TRUE(*reader.try_read(out));
    auto ok = writer.try_write(big);
    ASSERT_TRUE(ok);
    ASSERT_TRUE(*ok) << "at head " << ring.control().head;
    ASSERT_TRUE(*reader.try_read(out));
    EXPECT_EQ(out, big);
  }
}

TEST(RingBasic, OversizedRecordIsTooLarge) {
  LocalRing ring(512);
  auto writer = ring.writer();
  auto r = writer.try_write(std::vector<uint8_t>(writer.max_payload() + 1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kTooLarge);
  // Not sticky: the ring is fine.
  EXPECT_TRUE(*writer.try_write(std::vector<uint8_t>(writer.max_payload())));
}

TEST(RingBasic, WrapAroundWithOddSizesKeepsEveryRecordIntact) {
  const uint64_t seed = ringserve::testing::test_seed();
  std::mt19937_64 rng(seed);
  LocalRing ring(4096);
  auto writer = ring.writer();
  auto reader = ring.reader();
  const size_t max_size = 700;  // odd sizes up to a sixth of the ring
  uint64_t next_write = 0, next_read = 0;
  std::vector<uint8_t> out;
  size_t paddings = 0;
  while (next_read < 100000) {
    // Bursts of writes and reads of random length keep the fill level moving.
    for (int n = static_cast<int>(rng() % 8); n > 0; --n) {
      auto ok = writer.try_write(testing::make_record(next_write, max_size));
      ASSERT_TRUE(ok) << ok.error().to_string();
      if (!*ok) break;
      ++next_write;
    }
    for (int n = static_cast<int>(rng() % 8); n > 0; --n) {
      const uint64_t tail_before = ring.control().tail;
      auto got = reader.try_read(out);
      ASSERT_TRUE(got) << got.error().to_string() << " (seed " << seed << ")";
      if (!*got) break;
      if (ring.control().tail - tail_before > ring_record_bytes(out.size())) ++paddings;
      ASSERT_EQ(testing::check_record(out, next_read, max_size), "") << "seed " << seed;
      ++next_read;
    }
  }
  EXPECT_GT(paddings, 100u) << "the test should wrap through padding records often";
}

TEST(RingBasic, AttachChecksItsArguments) {
  LocalRing ring(1024);
  auto args = ring.args();
  args.capacity = 1000;  // not a power of two
  EXPECT_EQ(RingWriter::attach(args).error().code, Errc::kInvalidArgument);
  args = ring.args();
  args.capacity = 2048;  // larger than the region
  EXPECT_EQ(RingReader::attach(args).error().code, Errc::kInvalidArgument);
  args = ring.args();
  args.region = args.region.subspan(8);  // misaligned
  EXPECT_EQ(RingReader::attach(args).error().code, Errc::kInvalidArgument);
  args = ring.args();
  args.data_bell = nullptr;
  EXPECT_EQ(RingWriter::attach(args).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(validate_ring_capacity(128).error().code, Errc::kInvalidArgument);
  EXPECT_TRUE(validate_ring_capacity(kRingMinCapacity));
  EXPECT_TRUE(validate_ring_capacity(kRingMaxCapacity));
  EXPECT_FALSE(validate_ring_capacity(uint64_t{kRingMaxCapacity} * 2));
}

TEST(RingBasic, UnattachedEndpointsReportInsteadOfCrashing) {
  RingWriter writer;
  RingReader reader;
  std::vector<uint8_t> out;
  EXPECT_EQ(writer.try_write(out).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(reader.try_read(out).error().code, Errc::kInvalidArgument);
  EXPECT_TRUE(reader.prepare_wait());
  EXPECT_EQ(reader.wait_fd(), -1);
}

}  // namespace
}  // namespace ringserve::protocol
