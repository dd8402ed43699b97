// The 16x64 weight tiling (kernels/weight_layout.h) on the CPU: the offset
// map is a bijection that keeps every 16-row block in place and every tile
// contiguous, and the host retiling follows it and undoes itself.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "weight_layout.h"

namespace ringserve::testing {
namespace {

using kernels::tiled_offset;

TEST(WeightLayout, TiledOffsetIsABijectionWithinEachRowBlock) {
  for (auto [rows, cols] : {std::pair{16, 64}, std::pair{32, 192}, std::pair{128, 3584}}) {
    std::vector<int> hits(static_cast<size_t>(rows) * cols, 0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const size_t o = tiled_offset(r, c, cols);
        ASSERT_LT(o, hits.size());
        ++hits[o];
        // The same 16-row block of bytes as row-major.
        EXPECT_EQ(o / (16 * static_cast<size_t>(cols)), static_cast<size_t>(r / 16));
      }
    for (int h : hits) ASSERT_EQ(h, 1) << rows << "x" << cols;
  }
}

TEST(WeightLayout, ATileIsOneContiguousKilobyte) {
  const int cols = 3584;
  // Rows 16..31, columns 128..191: tile (1, 2).
  const size_t base = tiled_offset(16, 128, cols);
  EXPECT_EQ(base, 16u * cols + 2u * 1024u);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 64; ++c)
      EXPECT_EQ(tiled_offset(16 + r, 128 + c, cols), base + static_cast<size_t>(r) * 64 + c);
}

TEST(WeightLayout, FitsOnlyWholeTiles) {
  EXPECT_TRUE(kernels::tiled_layout_fits(16, 64));
  EXPECT_TRUE(kernels::tiled_layout_fits(4608, 3584));
  EXPECT_FALSE(kernels::tiled_layout_fits(17, 64));
  EXPECT_FALSE(kernels::tiled_layout_fits(64, 160));
  EXPECT_FALSE(kernels::tiled_layout_fits(0, 64));
}

TEST(WeightLayout, HostRetilingFollowsTheOffsetsAndUndoesItself) {
  const int rows = 48, cols = 320;
  std::vector<int8_t> w(static_cast<size_t>(rows) * cols);
  std::mt19937 rng(7);
  for (auto& v : w) v = static_cast<int8_t>(rng());
  auto t = w;
  kernels::retile_rows_host(t.data(), rows, cols, true);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      ASSERT_EQ(t[tiled_offset(r, c, cols)], w[static_cast<size_t>(r) * cols + c]) << r << "," << c;
  kernels::retile_rows_host(t.data(), rows, cols, false);
  EXPECT_EQ(t, w);
}

}  // namespace
}  // namespace ringserve::testing
