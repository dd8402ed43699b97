// Doorbells: who rings when, blocking waits with timeouts, and a ping-pong
// that would hang on a lost wakeup.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ring_fixture.h"

namespace ringserve::protocol {
namespace {

using namespace std::chrono_literals;
using testing::LocalRing;
using testing::readable;

const std::vector<uint8_t> kRecord{1, 2, 3, 4, 5};

TEST(RingWait, WriterRingsOnlyWhenTheReaderAnnouncedASleep) {
  LocalRing ring(1024);
  auto writer = ring.writer();
  auto reader = ring.reader();
  ASSERT_TRUE(*writer.try_write(kRecord));
  EXPECT_FALSE(readable(reader.wait_fd())) << "nobody sleeps: no syscall, no ring";

  std::vector<uint8_t> out;
  ASSERT_TRUE(*reader.try_read(out));
  EXPECT_FALSE(reader.prepare_wait()) << "empty ring: the reader may sleep";
  EXPECT_EQ(ring.control().reader_waiting, 1u);
  ASSERT_TRUE(*writer.try_write(kRecord));
  EXPECT_TRUE(readable(reader.wait_fd()));
  EXPECT_EQ(ring.control().reader_waiting, 0u) << "the writer takes the announcement";
  ASSERT_TRUE(*writer.try_write(kRecord));  // no second ring needed
  reader.finish_wait();
  EXPECT_FALSE(readable(reader.wait_fd())) << "finish_wait drains the doorbell";
  ASSERT_TRUE(*reader.try_read(out));
  ASSERT_TRUE(*reader.try_read(out));
}

TEST(RingWait, PrepareWaitSeesARecordThatIsAlreadyThere) {
  LocalRing ring(1024);
  auto writer = ring.writer();
  auto reader = ring.reader();
  ASSERT_TRUE(*writer.try_write(kRecord));
  EXPECT_TRUE(reader.prepare_wait());
  EXPECT_EQ(ring.control().reader_waiting, 0u) << "no announcement left behind";
}

TEST(RingWait, ReaderRingsAWriterWaitingForSpace) {
  LocalRing ring(256);
  auto writer = ring.writer();
  auto reader = ring.reader();
  const std::vector<uint8_t> record(writer.max_payload(), 9);
  while (*writer.try_write(record)) {
  }
  EXPECT_FALSE(writer.prepare_wait(record.size()));
  EXPECT_EQ(ring.control().writer_waiting, 1u);
  std::vector<uint8_t> out;
  ASSERT_TRUE(*reader.try_read(out));
  EXPECT_TRUE(readable(writer.wait_fd()));
  writer.finish_wait();
  EXPECT_TRUE(*writer.try_write(record));
  // With room available, prepare_wait says "retry now".
  ASSERT_TRUE(*reader.try_read(out));
  EXPECT_TRUE(writer.prepare_wait(1));
}

TEST(RingWait, BlockingReadTimesOut) {
  LocalRing ring(1024);
  auto reader = ring.reader();
  std::vector<uint8_t> out;
  auto st = reader.read(out, WaitOptions{10us, 20ms});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::kTimeout);
  EXPECT_EQ(ring.control().reader_waiting, 0u);
}

TEST(RingWait, BlockingWriteTimesOutOnAFullRing) {
  LocalRing ring(256);
  auto writer = ring.writer();
  const std::vector<uint8_t> record(100, 1);
  while (*writer.try_write(record)) {
  }
  auto st = writer.write(record, WaitOptions{0us, 20ms});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::kTimeout);
}

TEST(RingWait, SleepingReaderWakesOnAWrite) {
  LocalRing ring(1024);
  auto writer = ring.writer();
  auto reader = ring.reader();
  std::vector<uint8_t> out;
  std::thread late([&] {
    std::this_thread::sleep_for(30ms);
    ASSERT_TRUE(*writer.try_write(kRecord));
  });
  auto st = reader.read(out, WaitOptions{0us, 10s});
  late.join();
  ASSERT_TRUE(st) << st.error().to_string();
  EXPECT_EQ(out, kRecord);
}

TEST(RingWait, SleepingWriterWakesWhenTheReaderConsumes) {
  LocalRing ring(256);
  auto writer = ring.writer();
  auto reader = ring.reader();
  const std::vector<uint8_t> record(100, 3);
  int written = 0;
  while (*writer.try_write(record)) ++written;
  std::thread late([&] {
    std::this_thread::sleep_for(30ms);
    std::vector<uint8_t> out;
    ASSERT_TRUE(*reader.try_read(out));
  });
  auto st = writer.write(record, WaitOptions{0us, 10s});
  late.join();
  ASSERT_TRUE(st) << st.error().to_string();
}

// Two rings, two threads, no spinning: every round trip goes through an
// announced sleep and a doorbell. A lost wakeup shows up as a timeout.
TEST(RingWait, PingPongThroughSleepsLosesNoWakeup) {
  LocalRing there(1024), back(1024);
  auto ping_w = there.writer();
  auto ping_r = there.reader();
  auto pong_w = back.writer();
  auto pong_r = back.reader();
  constexpr int kRounds = 20000;
  const WaitOptions sleep_at_once{0us, 10s};
  std::thread echo([&] {
    std::vector<uint8_t> buf;
    for (int i = 0; i < kRounds; ++i) {
      auto st = ping_r.read(buf, sleep_at_once);
      ASSERT_TRUE(st) << "echo round " << i << ": " << st.error().to_string();
      ASSERT_TRUE(pong_w.write(buf, sleep_at_once));
    }
  });
  std::vector<uint8_t> buf;
  for (int i = 0; i < kRounds; ++i) {
    const auto record = testing::make_record(static_cast<uint64_t>(i), 64);
    ASSERT_TRUE(ping_w.write(record, sleep_at_once));
    auto st = pong_r.read(buf, sleep_at_once);
    ASSERT_TRUE(st) << "round " << i << ": " << st.error().to_string();
    ASSERT_EQ(buf, record);
  }
  echo.join();
}

}  // namespace
}  // namespace ringserve::protocol
