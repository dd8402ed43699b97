#include <gtest/gtest.h>

#include "offload/byte_size.h"

namespace ringserve::offload {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

TEST(ByteSize, ParsesBinaryAndDecimalUnits) {
  EXPECT_EQ(*parse_byte_size("8GiB"), 8 * kGiB);
  EXPECT_EQ(*parse_byte_size("12GiB"), 12 * kGiB);
  EXPECT_EQ(*parse_byte_size("7.5G"), 7 * kGiB + kGiB / 2);
  EXPECT_EQ(*parse_byte_size("8000MiB"), 8000 * kMiB);
  EXPECT_EQ(*parse_byte_size("8589934592"), 8 * kGiB);
  EXPECT_EQ(*parse_byte_size("8GB"), 8'000'000'000ull);
  EXPECT_EQ(*parse_byte_size("1.5 gib"), kGiB + kGiB / 2);
  EXPECT_EQ(*parse_byte_size("  64k "), 64 * kKiB);
  EXPECT_EQ(*parse_byte_size("2TB"), 2'000'000'000'000ull);
  EXPECT_EQ(*parse_byte_size("100B"), 100u);
  EXPECT_EQ(*parse_byte_size("0"), 0u);
  // Rounded down to a whole byte.
  EXPECT_EQ(*parse_byte_size("0.3K"), 307u);
  EXPECT_EQ(*parse_byte_size("1.0000000000000000000001GiB"), kGiB);
}

TEST(ByteSize, RefusesMalformedText) {
  for (const char* text :
       {"", "   ", "GiB", "-8GiB", "+8GiB", "8 GiBs", "8XB", "8.G", ".5G", "1e9", "8,5G", "nan",
        "inf", "0x10", "1.5", "1.5B", "8G8", "99999999999999999999", "5000000000G"}) {
    auto r = parse_byte_size(text);
    ASSERT_FALSE(r) << "accepted '" << text << "'";
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
    EXPECT_NE(r.error().message.find("size '"), std::string::npos) << r.error().message;
  }
}

TEST(ByteSize, FormatsDecimal) {
  EXPECT_EQ(format_bytes(2'330'000'000ull), "2.33 GB");
  EXPECT_EQ(format_bytes(512'000'000ull), "512.0 MB");
  EXPECT_EQ(format_bytes(7168), "7.2 kB");
  EXPECT_EQ(format_bytes(12), "12 B");
}

}  // namespace
}  // namespace ringserve::offload
