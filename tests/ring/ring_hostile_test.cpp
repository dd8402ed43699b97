// The peer controls every byte of the ring: corrupted indices, lengths and
// kinds must come back as kProtocolError (and stay failed), never as a crash
// or an out-of-bounds access. fuzz_ring_reader explores further under ASan.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ring_fixture.h"
#include "support/test_support.h"

namespace ringserve::protocol {
namespace {

using testing::LocalRing;

void put_header(LocalRing& ring, uint64_t offset, uint32_t length, RecordKind kind) {
  const RecordHeader h{length, static_cast<uint32_t>(kind)};
  std::memcpy(ring.data() + offset, &h, sizeof(h));
}

void expect_violation(Expected<bool> r) {
  ASSERT_FALSE(r) << "accepted a corrupted ring";
  EXPECT_EQ(r.error().code, Errc::kProtocolError);
}

class RingHostile : public ::testing::Test {
 protected:
  LocalRing ring{1024};
  std::vector<uint8_t> out;
};

TEST_F(RingHostile, HeadBeyondTheCapacityIsAViolationAndSticks) {
  auto reader = ring.reader();
  ring.control().head = 2048;  // claims more bytes than the ring holds
  expect_violation(reader.try_read(out));
  ring.control().head = 0;
  expect_violation(reader.try_read(out));  // sticky: the stream is untrustworthy now
  EXPECT_TRUE(reader.prepare_wait()) << "a failed reader must not go to sleep";
}

TEST_F(RingHostile, MisalignedHeadIsAViolation) {
  auto reader = ring.reader();
  ring.control().head = 12;
  expect_violation(reader.try_read(out));
}

TEST_F(RingHostile, HeadBehindTheTailIsAViolation) {
  auto writer = ring.writer();
  auto reader = ring.reader();
  ASSERT_TRUE(*writer.try_write(std::vector<uint8_t>(8, 1)));
  ASSERT_TRUE(*writer.try_write(std::vector<uint8_t>(8, 1)));
  ASSERT_TRUE(*reader.try_read(out));
  ASSERT_TRUE(*reader.try_read(out));
  ring.control().head = 16;  // behind what was already read
  expect_violation(reader.try_read(out));
}

TEST_F(RingHostile, HeadWrappedToHugeIsAViolation) {
  auto reader = ring.reader();
  ring.control().head = ~uint64_t{7};
  expect_violation(reader.try_read(out));
}

TEST_F(RingHostile, LengthAboveTheMaximumIsAViolation) {
  auto reader = ring.reader();
  put_header(ring, 0, 0xfffffff0u, RecordKind::kData);
  ring.control().head = 1024;
  expect_violation(reader.try_read(out));
  EXPECT_TRUE(out.empty()) << "nothing may be allocated for a bogus length";
}

TEST_F(RingHostile, RecordRunningPastHeadIsAViolation) {
  auto reader = ring.reader();
  put_header(ring, 0, 100, RecordKind::kData);
  ring.control().head = 16;  // only 16 bytes published
  expect_violation(reader.try_read(out));
}

TEST_F(RingHostile, RecordStraddlingTheEndIsAViolation) {
  auto writer = ring.writer();
  auto reader = ring.reader();
  // Move both ends to 1008, 16 bytes before the end of the data area.
  for (int i = 0; i < 63; ++i) {
    ASSERT_TRUE(*writer.try_write(std::vector<uint8_t>(8, 1)));
    ASSERT_TRUE(*reader.try_read(out));
  }
  ASSERT_EQ(ring.control().head, 1008u);
  put_header(ring, 1008, 40, RecordKind::kData);  // would run to 1056
  ring.control().head = 1008 + 48;
  expect_violation(reader.try_read(out));
}

TEST_F(RingHostile, PaddingThatDoesNotReachTheEndIsAViolation) {
  auto reader = ring.reader();
  put_header(ring, 0, 8, RecordKind::kPadding);
  ring.control().head = 64;
  expect_violation(reader.try_read(out));
}

TEST_F(RingHostile, TwoPaddingRecordsInARowAreAViolation) {
  auto writer = ring.writer();
  auto reader = ring.reader();
  for (int i = 0; i < 63; ++i) {
    ASSERT_TRUE(*writer.try_write(std::vector<uint8_t>(8, 1)));
    ASSERT_TRUE(*reader.try_read(out));
  }
  put_header(ring, 1008, 8, RecordKind::kPadding);  // to the end: fine
  put_header(ring, 0, 1016, RecordKind::kPadding);  // a whole ring of padding: not fine
  ring.control().head = 1008 + 16 + 1024 - 16;
  expect_violation(reader.try_read(out));
}

TEST_F(RingHostile, UnknownRecordKindIsAViolation) {
  auto reader = ring.reader();
  const RecordHeader h{4, 0x12345678};
  std::memcpy(ring.data(), &h, sizeof(h));
  ring.control().head = 16;
  expect_violation(reader.try_read(out));
}

TEST_F(RingHostile, TailBeyondHeadIsAViolationForTheWriter) {
  auto writer = ring.writer();
  // Fill so the writer has to look at the tail.
  const std::vector<uint8_t> record(56, 1);
  while (*writer.try_write(record)) {
  }
  ring.control().tail = ring.control().head + 64;  // "read" what was never written
  expect_violation(writer.try_write(record));
  expect_violation(writer.try_write(record));
  EXPECT_TRUE(writer.prepare_wait(8));
}

TEST_F(RingHostile, TailMovingBackwardsIsAViolationForTheWriter) {
  auto writer = ring.writer();
  auto reader = ring.reader();
  const std::vector<uint8_t> record(56, 1);
  while (*writer.try_write(record)) {
  }
  ASSERT_TRUE(*reader.try_read(out));
  ASSERT_TRUE(*writer.try_write(record));  // sees tail 64
  while (*reader.try_read(out)) {
  }
  ring.control().tail = 0;
  // The writer believes the ring is empty and only looks again when full.
  while (true) {
    auto r = writer.try_write(record);
    if (!r) {
      EXPECT_EQ(r.error().code, Errc::kProtocolError);
      break;
    }
    ASSERT_TRUE(*r) << "the writer stopped without noticing the tail went back";
  }
}

TEST_F(RingHostile, ImpossibleIndicesAreRefusedAtAttach) {
  ring.control().head = 8;
  ring.control().tail = 16;
  EXPECT_EQ(RingReader::attach(ring.args()).error().code, Errc::kProtocolError);
  EXPECT_EQ(RingWriter::attach(ring.args()).error().code, Errc::kProtocolError);
  ring.control().head = 4096;
  ring.control().tail = 0;
  EXPECT_EQ(RingReader::attach(ring.args()).error().code, Errc::kProtocolError);
  ring.control().head = 3;
  EXPECT_EQ(RingWriter::attach(ring.args()).error().code, Errc::kProtocolError);
}

TEST_F(RingHostile, AnnouncementFlagsAreOnlyHints) {
  auto writer = ring.writer();
  auto reader = ring.reader();
  // A peer that claims to sleep all the time only costs doorbell rings.
  for (int i = 0; i < 100; ++i) {
    ring.control().reader_waiting = 0xffffffffu;
    ring.control().writer_waiting = 7;
    ASSERT_TRUE(*writer.try_write(std::vector<uint8_t>(8, 1)));
    ASSERT_TRUE(*reader.try_read(out));
  }
}

TEST_F(RingHostile, RandomScribblesNeverEscapeTheRing) {
  const uint64_t seed = ringserve::testing::test_seed();
  std::mt19937_64 rng(seed);
  size_t violations = 0, records = 0;
  for (int round = 0; round < 3000; ++round) {
    LocalRing r(256);
    for (size_t i = 0; i < 256; i += 8) {
      const uint64_t v = rng();
      std::memcpy(r.data() + i, &v, 8);
    }
    // Mostly plausible record headers so the checks past the first are reached.
    for (size_t i = 0; i < 256; i += 8 * (1 + rng() % 4)) {
      const uint32_t kind = (rng() % 3 == 0) ? static_cast<uint32_t>(RecordKind::kPadding)
                                             : static_cast<uint32_t>(RecordKind::kData);
      const RecordHeader h{static_cast<uint32_t>(rng() % 300), kind};
      std::memcpy(r.data() + i, &h, sizeof(h));
    }
    r.control().tail = (rng() % 64) * 8;
    r.control().head = r.control().tail + (rng() % 40) * 8;
    auto reader = RingReader::attach(r.args());
    if (!reader) continue;
    std::vector<uint8_t> buf;
    for (int i = 0; i < 64; ++i) {
      auto got = reader->try_read(buf);
      if (!got) {
        ++violations;
        break;
      }
      if (!*got) break;
      ++records;
      ASSERT_LE(buf.size(), ring_max_payload(256)) << "seed " << seed;
    }
  }
  EXPECT_GT(violations, 100u);
  EXPECT_GT(records, 100u);
}

}  // namespace
}  // namespace ringserve::protocol
