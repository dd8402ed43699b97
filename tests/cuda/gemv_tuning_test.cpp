// The GEMV tuner's choice among timed shapes (no GPU needed): the fastest,
// except that near-ties go to the earliest shape, so that timing noise
// between two starts does not change the summation order.
#include "cuda/gemv_tuning.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

}  // namespace
}  // namespace ringserve::cuda
