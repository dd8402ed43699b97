#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>

#include "offload/auto_choice.h"
#include "offload_test_util.h"

namespace ringserve::offload {
namespace {

using testing::kGiB;

struct AutoChoice : ::testing::Test {
  model::ModelConfig config = testing::qwen7b();
  ModelFootprint f = *compute_footprint(config);
  PlanRequest base;

  void SetUp() override {
    base.kv_bytes = kv_pool_bytes(f, 4 * 4096);
    base.workspace_bytes = estimate_workspace_bytes(config, EngineShape{4, 4096, 512});
  }
  uint64_t fixed() const {
    return base.kv_bytes + base.workspace_bytes + f.lm_head_bytes + f.final_norm_bytes;
  }
};

TEST_F(AutoChoice, NothingStreamsMeansStream) {
  base.gpu_budget_bytes = 40 * kGiB;
  auto d = decide_offload(f, base, LinkMeasurement{55, 60, 4000});
  ASSERT_TRUE(d) << d.error().to_string();
  EXPECT_EQ(d->strategy, Strategy::kStream);
  EXPECT_EQ(d->plan.streamed_layers(), 0);
  std::cout << d->reason << "\n";
}

TEST_F(AutoChoice, SmallDeficitFavoursZeroCopy) {
  // One layer short: stream must move 3 layers through 2 slots, zero-copy 1.
  base.gpu_budget_bytes = fixed() + f.all_layers_bytes() - 1;
  auto d = decide_offload(f, base, LinkMeasurement{55, 40, 4000});
  ASSERT_TRUE(d) << d.error().to_string();
  std::cout << d->reason << "\n";
  EXPECT_EQ(d->strategy, Strategy::kZeroCopy);
  EXPECT_EQ(d->plan.streamed_layers(), 1);
  EXPECT_LT(d->zerocopy_step_s, d->stream_step_s);
}

TEST_F(AutoChoice, LargeDeficitFavoursTheFasterLink) {
  base.gpu_budget_bytes = fixed() + 12 * f.layer_bytes;  // 16 layers off the GPU
  auto d = decide_offload(f, base, LinkMeasurement{55, 25, 4000});
  ASSERT_TRUE(d) << d.error().to_string();
  std::cout << d->reason << "\n";
  EXPECT_EQ(d->strategy, Strategy::kStream);
  EXPECT_EQ(d->plan.strategy, Strategy::kStream);
  EXPECT_EQ(d->plan.resident_layers, 10);

  auto z = decide_offload(f, base, LinkMeasurement{40, 55, 4000});
  ASSERT_TRUE(z);
  std::cout << z->reason << "\n";
  EXPECT_EQ(z->strategy, Strategy::kZeroCopy);
  EXPECT_EQ(z->plan.resident_layers, 12);
}

TEST_F(AutoChoice, PredictionsFollowTheModel) {
  base.gpu_budget_bytes = fixed() + 12 * f.layer_bytes;
  const LinkMeasurement m{50, 25, 4000};
  auto d = *decide_offload(f, base, m);
  PlanRequest s = base;
  s.strategy = Strategy::kStream;
  auto sp = *make_plan(f, s);
  const double copy = static_cast<double>(sp.link_bytes_per_step(1)) / 50e9;
  EXPECT_NEAR(d.stream_step_s, copy, 1e-12);  // copy-bound: 18 layers at 50 GB/s
  // With no device rate the zero-copy prediction is only the link.
  PlanRequest z = base;
  z.strategy = Strategy::kZeroCopy;
  auto zp = *make_plan(f, z);
  EXPECT_NEAR(predicted_step_seconds(zp, LinkMeasurement{50, 25, 0}),
              static_cast<double>(zp.link_bytes_per_step(1)) / 25e9, 1e-12);
  // A slow device makes the resident part count for zero-copy.
  EXPECT_GT(predicted_step_seconds(zp, LinkMeasurement{50, 25, 100}),
            predicted_step_seconds(zp, LinkMeasurement{50, 25, 0}));
}

TEST_F(AutoChoice, StreamRefusedZeroCopyFits) {
  base.gpu_budget_bytes = fixed() + f.layer_bytes;  // no room for a 2-slot ring + prefix
  auto d = decide_offload(f, base, LinkMeasurement{55, 20, 0});
  ASSERT_TRUE(d) << d.error().to_string();
  std::cout << d->reason << "\n";
  EXPECT_EQ(d->strategy, Strategy::kZeroCopy);
  EXPECT_LT(d->stream_step_s, 0);
  EXPECT_NE(d->reason.find("stream refused"), std::string::npos);
}

TEST_F(AutoChoice, NeitherFits) {
  base.gpu_budget_bytes = fixed() - 1;
  auto d = decide_offload(f, base, LinkMeasurement{55, 20, 0});
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, Errc::kResourceExhausted);
  EXPECT_NE(d.error().message.find("offload auto"), std::string::npos);
}

TEST_F(AutoChoice, RefusesBadMeasurements) {
  base.gpu_budget_bytes = 8 * kGiB;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (LinkMeasurement m :
       {LinkMeasurement{0, 20, 0}, LinkMeasurement{55, 0, 0}, LinkMeasurement{-1, 20, 0},
        LinkMeasurement{nan, 20, 0}, LinkMeasurement{55, inf, 0}, LinkMeasurement{55, 20, -5},
        LinkMeasurement{55, 20, nan}})
    EXPECT_EQ(decide_offload(f, base, m).error().code, Errc::kInvalidArgument);
}

}  // namespace
}  // namespace ringserve::offload
