// Two threads push millions of self-checking records through one ring:
// nothing may be lost, duplicated, reordered or torn.
#include <gtest/gtest.h>

#include <thread>

#include "ring_fixture.h"

namespace ringserve::protocol {
namespace {

using namespace std::chrono_literals;
using testing::LocalRing;

void run_stress(uint32_t capacity, uint64_t records, size_t max_size, WaitOptions wait) {
  LocalRing ring(capacity);
  auto writer = ring.writer();
  auto reader = ring.reader();
  std::thread producer([&] {
    for (uint64_t seq = 0; seq < records; ++seq) {
      auto st = writer.write(testing::make_record(seq, max_size), wait);
      ASSERT_TRUE(st) << "record " << seq << ": " << st.error().to_string();
    }
  });
  std::vector<uint8_t> out;
  uint64_t seq = 0;
  for (; seq < records; ++seq) {
    auto st = reader.read(out, wait);
    ASSERT_TRUE(st) << "record " << seq << ": " << st.error().to_string();
    const std::string problem = testing::check_record(out, seq, max_size);
    ASSERT_EQ(problem, "");
  }
  producer.join();
  EXPECT_EQ(seq, records);
  auto extra = reader.try_read(out);
  ASSERT_TRUE(extra);
  EXPECT_FALSE(*extra) << "a record was duplicated";
}

TEST(RingStress, TwoMillionRecordsSpinningThenSleeping) {
  run_stress(64 * 1024, 2'000'000, 200, WaitOptions{20us, 30s});
}

TEST(RingStress, SmallRingForcesConstantBackpressureAndWrap) {
  // Room for only a handful of records: the writer waits on almost every one.
  run_stress(1024, 100'000, 300, WaitOptions{5us, 30s});
}

}  // namespace
}  // namespace ringserve::protocol
