#include <gtest/gtest.h>

#include "offload/footprint.h"
#include "offload_test_util.h"

namespace ringserve::offload {
namespace {

TEST(Footprint, MatchesTheSevenBShapes) {
  auto f = compute_footprint(testing::qwen7b());
  ASSERT_TRUE(f) << f.error().to_string();
  // q 3584x3584, k and v 512x3584, o 3584x3584, gate and up 18944x3584,
  // down 3584x18944: 233,046,016 int8 bytes a layer.
  EXPECT_EQ(f->layer_int8_bytes, 233'046'016u);
  // + fp32 scales for 49,664 rows, fp32 q/k/v biases (4,608), two norms.
  EXPECT_EQ(f->layer_bytes, 233'046'016u + 4u * 49'664 + 4u * 4'608 + 8u * 3'584);
  EXPECT_EQ(f->lm_head_bytes, 152'064ull * 3'584 + 4ull * 152'064);
  EXPECT_EQ(f->embedding_bytes, 2ull * 152'064 * 3'584);
  EXPECT_EQ(f->embedding_row_bytes, 7'168u);
  EXPECT_EQ(f->kv_bytes_per_token, 57'344u);  // 28 x 2 x 4 x 128 x 2
  // DESIGN.md: about 7.1 GB of INT8 weights a token.
  EXPECT_NEAR(static_cast<double>(f->step_weight_bytes()) / 1e9, 7.08, 0.02);
  EXPECT_EQ(f->largest_linear_elems, 2ull * 18'944 * 3'584);
}

TEST(Footprint, RefusesImpossibleShapes) {
  auto c = testing::qwen7b();
  c.num_kv_heads = 0;
  EXPECT_EQ(compute_footprint(c).error().code, Errc::kInvalidArgument);
  c = testing::qwen7b();
  c.num_kv_heads = 5;
  EXPECT_EQ(compute_footprint(c).error().code, Errc::kInvalidArgument);
  c = testing::qwen7b();
  c.hidden_size = -1;
  EXPECT_EQ(compute_footprint(c).error().code, Errc::kInvalidArgument);
}

TEST(Footprint, KvPoolAndWorkspace) {
  const auto c = testing::qwen7b();
  auto f = *compute_footprint(c);
  EXPECT_EQ(kv_pool_bytes(f, 4 * 4096), 16384ull * 57'344);
  const uint64_t ws = estimate_workspace_bytes(c, EngineShape{4, 4096, 512});
  // Dominated by the bf16 gate/up dequant buffer (272 MB) and the prefill
  // GEMM output (78 MB); well under half a GB.
  EXPECT_GT(ws, 2ull * f.largest_linear_elems);
  EXPECT_LT(ws, 600'000'000ull);
  EXPECT_GT(estimate_workspace_bytes(c, EngineShape{4, 4096, 2048}), ws);
}

}  // namespace
}  // namespace ringserve::offload
