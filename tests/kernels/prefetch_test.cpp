// The L2 prefetch is a hint: it must leave memory exactly as it was (its CPU
// reference is the identity), accept unaligned ranges, and refuse bad
// arguments. A GEMV run right after a prefetch of its own weights must give
// the same bits as without it.
#include <gtest/gtest.h>

#include <cstring>

#include "device_buffer.h"
#include "gemv_w8a16.h"
#include "prefetch.h"
#include "reference.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

TEST(PrefetchL2, LeavesMemoryUnchanged) {
  std::mt19937_64 rng(test_seed());
  auto data = ref::random_f32(3 << 20, rng, -1.0f, 1.0f);  // 12 MiB
  DeviceBuffer<float> d(data);
  kernels::PrefetchArgs a;
  // Unaligned starts and lengths, an empty range, and the whole buffer.
  const auto* base = reinterpret_cast<const char*>(d.get());
  a.ranges[a.count++] = {base + 3, 1000};
  a.ranges[a.count++] = {base + 4097, 0};
  a.ranges[a.count++] = {base, data.size() * 4};
  a.ranges[a.count++] = {base + data.size() * 4 - 129, 129};
  ASSERT_TRUE(kernels::prefetch_l2(a, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto back = d.download();
  EXPECT_EQ(0, std::memcmp(back.data(), data.data(), data.size() * 4));
}

TEST(PrefetchL2, RefusesBadArguments) {
  kernels::PrefetchArgs a;
  a.count = kernels::kMaxPrefetchRanges + 1;
  EXPECT_FALSE(kernels::prefetch_l2(a, nullptr));
  a.count = -1;
  EXPECT_FALSE(kernels::prefetch_l2(a, nullptr));
  a.count = 1;
  a.ranges[0] = {nullptr, 64};
  EXPECT_FALSE(kernels::prefetch_l2(a, nullptr));
  a.ranges[0] = {nullptr, 0};
  EXPECT_TRUE(kernels::prefetch_l2(a, nullptr));  // nothing to do
}

TEST(PrefetchL2, GemvAfterPrefetchIsBitIdentical) {
  std::mt19937_64 rng(test_seed());
  const int rows = 4608, cols = 3584, batch = 3;
  std::vector<int8_t> w(static_cast<size_t>(rows) * cols);
  for (auto& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  const auto scale = ref::random_f32(rows, rng, 0.001f, 0.01f);
  const auto x = ref::random_bf16(static_cast<size_t>(batch) * cols, rng);
  DeviceBuffer<int8_t> dw(w);
  DeviceBuffer<float> ds(scale);
  DeviceBuffer<uint16_t> dx(x);
  auto run = [&](bool prefetch) {
    DeviceBuffer<float> out(static_cast<size_t>(batch) * rows);
    out.poison();
    if (prefetch) {
      kernels::PrefetchArgs a;
      a.ranges[a.count++] = {dw.get(), w.size()};
      EXPECT_TRUE(kernels::prefetch_l2(a, nullptr));
    }
    kernels::GemvArgs g;
    g.w = dw.get();
    g.scale = ds.get();
    g.rows = rows;
    g.cols = cols;
    g.x = reinterpret_cast<const __nv_bfloat16*>(dx.get());
    g.batch = batch;
    g.out = out.get();
    EXPECT_TRUE(kernels::gemv_w8a16(g, nullptr));
    return out.download();
  };
  const auto plain = run(false), warmed = run(true);
  ASSERT_EQ(plain.size(), warmed.size());
  EXPECT_EQ(0, std::memcmp(plain.data(), warmed.data(), plain.size() * 4));
}

}  // namespace
}  // namespace ringserve::testing
