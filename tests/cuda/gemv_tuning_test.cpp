// The GEMV tuner's choice among timed shapes (no GPU needed): the fastest,
// except that near-ties go to the earliest shape, so that timing noise
// between two starts does not change the summation order.
#include "cuda/gemv_tuning.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "gemv_w8a16.h"

namespace ringserve::cuda {
namespace {

int pick(std::vector<float> ms) {
  return pick_first_within(ms);
}

TEST(GemvTuningPick, TakesTheFastestWhenNothingIsClose) {
  EXPECT_EQ(pick({10.0f, 9.0f, 8.0f}), 2);
  EXPECT_EQ(pick({8.0f, 9.0f, 10.0f}), 0);
  EXPECT_EQ(pick({9.0f, 7.0f, 8.0f}), 1);
}

TEST(GemvTuningPick, NearTiesGoToTheEarliestShape) {
  // 175.4 and 175.3 us: the head's two shapes that swapped between starts.
  EXPECT_EQ(pick({180.0f, 175.4f, 175.3f}), 1);
  EXPECT_EQ(pick({180.0f, 175.3f, 175.4f}), 1);
  // Within 1 % of the fastest, but later than another tied shape.
  EXPECT_EQ(pick({100.9f, 100.0f, 100.5f}), 0);
  // Just outside 1 %.
  EXPECT_EQ(pick({101.2f, 100.0f}), 1);
  // The same order whatever the noise within the margin.
  for (float noise : {-0.2f, -0.1f, 0.0f, 0.1f, 0.2f})
    EXPECT_EQ(pick({50.0f + noise, 50.0f - noise, 60.0f}), 0) << noise;
}

TEST(GemvTuningPick, IgnoresTimesThatAreNotFinite) {
  EXPECT_EQ(pick({NAN, 9.0f, 9.05f}), 1);
  EXPECT_EQ(pick({INFINITY, 9.0f}), 1);
  EXPECT_EQ(pick({NAN, INFINITY}), -1);
  EXPECT_EQ(pick({}), -1);
  EXPECT_EQ(pick({3.0f}), 0);
}

// The ring shapes the tuner may add (no GPU needed to check what they are):
// valid, named apart, only for tiled weights in whole row blocks, and each
// summing in the order of the grouped kernel with its warp count, which is
// what lets the tuner pair a ring shape at batch 1 with a grouped one at
// wider batches.
TEST(GemvRingShapes, AreValidDistinctAndPairWithTheGroupedKernel) {
  using kernels::GemvConfig;
  using kernels::GemvEpilogue;
  for (auto epi :
       {GemvEpilogue::kStoreF32, GemvEpilogue::kResidualAddF32, GemvEpilogue::kSiluMulBf16}) {
    const auto rings = kernels::gemv_ring_configs(epi);
    ASSERT_FALSE(rings.empty());
    std::set<std::string> names;
    for (const GemvConfig& r : rings) {
      EXPECT_TRUE(kernels::gemv_config_valid(r)) << kernels::describe(r);
      names.insert(kernels::describe(r));
      if (epi == GemvEpilogue::kSiluMulBf16) {
        EXPECT_EQ(r.tiles, 2);
      }
      const GemvConfig grouped{r.tiles, r.warps, r.tiles == 1 ? 4 : 2};
      EXPECT_TRUE(kernels::same_summation_order(r, grouped)) << kernels::describe(r);
      const GemvConfig original{r.tiles, r.warps, 0};
      EXPECT_FALSE(kernels::same_summation_order(r, original)) << kernels::describe(r);
      EXPECT_FALSE(kernels::gemv_config_fits(r, 4608, kernels::WeightLayout::kRowMajor));
      EXPECT_TRUE(kernels::gemv_config_fits(r, 4608, kernels::WeightLayout::kTiled16x64));
      EXPECT_EQ(kernels::gemv_config_fits(r, 48, kernels::WeightLayout::kTiled16x64), r.tiles == 1);
    }
    EXPECT_EQ(names.size(), rings.size());
  }
  GemvConfig bad{1, 16};
  bad.ring_kb = 48;  // no ring kernel with 16 consumer warps
  EXPECT_FALSE(kernels::gemv_config_valid(bad));
  bad = GemvConfig{1, 8, 4};
  bad.ring_kb = 48;  // the ring kernel has no unroll
  EXPECT_FALSE(kernels::gemv_config_valid(bad));
}

}  // namespace
}  // namespace ringserve::cuda
