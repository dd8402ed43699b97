#include <gtest/gtest.h>

#include <iostream>

#include "offload/byte_size.h"
#include "offload/plan.h"
#include "offload_test_util.h"

namespace ringserve::offload {
namespace {

using testing::kGiB;

struct SevenB : ::testing::Test {
  model::ModelConfig config = testing::qwen7b();
  ModelFootprint f = *compute_footprint(config);

  PlanRequest request(uint64_t budget, Strategy s, int max_batch = 4, int max_context = 4096) {
    PlanRequest r;
    r.gpu_budget_bytes = budget;
    r.kv_bytes = kv_pool_bytes(f, static_cast<uint64_t>(max_batch) * max_context);
    r.workspace_bytes = estimate_workspace_bytes(config, EngineShape{max_batch, max_context, 512});
    r.strategy = s;
    r.max_batch = max_batch;
    return r;
  }
};

// Invariants every accepted plan keeps; also checks that the plan is
// maximal: one more resident layer would not have fit.
void expect_consistent(const ModelFootprint& f, const PlanRequest& r, const Plan& p) {
  EXPECT_LE(p.gpu_total_bytes, r.gpu_budget_bytes);
  EXPECT_EQ(p.gpu_total_bytes, p.resident_layer_bytes + p.lm_head_bytes + p.embedding_device_bytes +
                                   p.final_norm_bytes + p.kv_bytes + p.workspace_bytes +
                                   p.ring_bytes + p.extra_bytes);
  EXPECT_TRUE(p.lm_head_resident);
  EXPECT_EQ(p.streamed_bytes_per_step, static_cast<uint64_t>(p.streamed_layers()) * f.layer_bytes);
  for (int i = 0; i < p.num_layers; ++i) EXPECT_EQ(p.is_streamed(i), i >= p.resident_layers);
  if (p.streamed_layers() > 0) {
    EXPECT_FALSE(p.embedding_resident && f.embedding_bytes > f.layer_bytes)
        << "the embedding must leave before any layer of a model whose table outweighs a layer";
    if (r.strategy == Strategy::kStream) {
      EXPECT_GT(p.streamed_layers(), r.ring_slots) << "streaming k <= N layers saves nothing";
      EXPECT_EQ(p.ring_slots, r.ring_slots);
    } else {
      EXPECT_EQ(p.ring_slots, 0);
    }
    PlanRequest more = r;
    more.gpu_budget_bytes = p.gpu_total_bytes + f.layer_bytes - 1;
    // Keeping one more layer resident always costs a full layer more.
    auto bigger = make_plan(f, more);
    ASSERT_TRUE(bigger);
    EXPECT_EQ(bigger->resident_layers, p.resident_layers);
  } else {
    EXPECT_EQ(p.ring_slots, 0);
    EXPECT_EQ(p.ring_bytes, 0u);
  }
}

TEST_F(SevenB, EverythingFitsStreamsNothing) {
  auto r = request(80 * kGiB, Strategy::kStream);
  auto p = make_plan(f, r);
  ASSERT_TRUE(p) << p.error().to_string();
  std::cout << p->to_string() << "\n";
  EXPECT_EQ(p->resident_layers, 28);
  EXPECT_TRUE(p->embedding_resident);
  EXPECT_EQ(p->streamed_bytes_per_step, 0u);
  EXPECT_EQ(p->link_bytes_per_step(8), 0u);
  EXPECT_EQ(p->host_pinned_bytes, 0u);
  EXPECT_EQ(p->ring_slot(27), -1);
  EXPECT_EQ(p->floor_seconds(55.0), 0.0);
  EXPECT_NE(p->to_string().find("streamed: nothing"), std::string::npos);
  expect_consistent(f, r, *p);
}

TEST_F(SevenB, TwelveGiB) {
  for (int batch : {4, 8}) {
    auto r = request(12 * kGiB, Strategy::kStream, batch, 4096);
    auto p = make_plan(f, r);
    ASSERT_TRUE(p) << p.error().to_string();
    std::cout << "12 GiB, " << batch << " x 4096 tokens of KV:\n"
              << p->to_string() << "\n"
              << p->floor_line(55.0, batch) << "\n";
    expect_consistent(f, r, *p);
    EXPECT_EQ(p->resident_layers, 28);
  }
  // 8 sequences of 4096 tokens: KV 1.88 GB + workspace still leave room for
  // the whole model, table included.
  auto p = *make_plan(f, request(12 * kGiB, Strategy::kStream, 8, 4096));
  EXPECT_TRUE(p.embedding_resident);
}

TEST_F(SevenB, EightGiB) {
  // 4 x 4096 tokens: every layer fits once the embedding moves to the host.
  auto r4 = request(8 * kGiB, Strategy::kStream, 4, 4096);
  auto p4 = make_plan(f, r4);
  ASSERT_TRUE(p4) << p4.error().to_string();
  std::cout << "8 GiB, 4 x 4096:\n" << p4->to_string() << "\n" << p4->floor_line(55.0, 4) << "\n";
  expect_consistent(f, r4, *p4);
  EXPECT_EQ(p4->resident_layers, 28);
  EXPECT_FALSE(p4->embedding_resident);
  EXPECT_EQ(p4->link_bytes_per_step(4), 4u * 7'168);

  // 8 x 8192 tokens of KV (3.76 GB): layers stream.
  for (Strategy s : {Strategy::kStream, Strategy::kZeroCopy}) {
    auto r = request(8 * kGiB, s, 8, 8192);
    auto p = make_plan(f, r);
    ASSERT_TRUE(p) << p.error().to_string();
    std::cout << "8 GiB, 8 x 8192:\n" << p->to_string() << "\n" << p->floor_line(55.0, 8) << "\n";
    expect_consistent(f, r, *p);
    EXPECT_FALSE(p->embedding_resident);
    EXPECT_GT(p->streamed_layers(), 0);
    EXPECT_LT(p->streamed_layers(), 28);
  }
  auto stream = *make_plan(f, request(8 * kGiB, Strategy::kStream, 8, 8192));
  auto zc = *make_plan(f, request(8 * kGiB, Strategy::kZeroCopy, 8, 8192));
  // The ring's two layer buffers are two layers zero-copy keeps resident.
  EXPECT_EQ(zc.resident_layers, stream.resident_layers + 2);
}

TEST_F(SevenB, SixGiBPlanIsExact) {
  auto r = request(6 * kGiB, Strategy::kStream, 4, 4096);
  auto p = make_plan(f, r);
  ASSERT_TRUE(p) << p.error().to_string();
  std::cout << p->to_string() << "\n" << p->floor_line(55.0, 1) << "\n";
  expect_consistent(f, r, *p);
  // Fixed part: KV 0.94 GB + workspace + lm_head + norm; the rest holds
  // floor(rest / layer) layers, two of which are the ring.
  const uint64_t fixed = r.kv_bytes + r.workspace_bytes + f.lm_head_bytes + f.final_norm_bytes;
  const int fit = static_cast<int>((r.gpu_budget_bytes - fixed) / f.layer_bytes);
  EXPECT_EQ(p->resident_layers, fit - 2);
  EXPECT_EQ(p->ring_slots, 2);
  EXPECT_EQ(p->ring_slot(p->resident_layers), 0);
  EXPECT_EQ(p->ring_slot(p->resident_layers + 1), 1);
  EXPECT_EQ(p->ring_slot(p->resident_layers + 2), 0);
  EXPECT_EQ(p->ring_slot(0), -1);
  EXPECT_EQ(p->streamed_bytes_per_step, static_cast<uint64_t>(28 - fit + 2) * f.layer_bytes);
  EXPECT_NEAR(p->floor_seconds(55.0), static_cast<double>(p->link_bytes_per_step(1)) / 55e9, 1e-12);
  EXPECT_NE(p->to_string().find(fmt::format("resident: layers 0-{}, lm_head", fit - 3)),
            std::string::npos);
  EXPECT_NE(p->to_string().find(fmt::format("streamed: layers {}-27", fit - 2)), std::string::npos);
}

TEST_F(SevenB, StreamingFewerLayersThanTheRingSavesNothing) {
  // Just short of everything resident (embedding already on the host).
  auto r = request(80 * kGiB, Strategy::kStream);
  const uint64_t all =
      r.kv_bytes + r.workspace_bytes + f.lm_head_bytes + f.final_norm_bytes + f.all_layers_bytes();
  r.gpu_budget_bytes = all - 1;
  auto stream = *make_plan(f, r);
  EXPECT_EQ(stream.resident_layers, 25);  // 3 stream through 2 slots: one layer saved
  EXPECT_EQ(stream.gpu_total_bytes, all - f.layer_bytes);
  r.ring_slots = 3;
  EXPECT_EQ(make_plan(f, r)->resident_layers, 24);
  r.strategy = Strategy::kZeroCopy;
  EXPECT_EQ(make_plan(f, r)->resident_layers, 27);
}

TEST_F(SevenB, BudgetSweepIsMonotoneAndAlwaysConsistent) {
  for (Strategy s : {Strategy::kStream, Strategy::kZeroCopy}) {
    auto r = request(0, s);
    const uint64_t lo = minimum_budget(f, r);
    int last_resident = -1;
    for (uint64_t b = lo; b < 12 * kGiB; b += 97'000'000) {
      r.gpu_budget_bytes = b;
      auto p = make_plan(f, r);
      ASSERT_TRUE(p) << b << ": " << p.error().to_string();
      expect_consistent(f, r, *p);
      EXPECT_GE(p->resident_layers, last_resident);
      last_resident = p->resident_layers;
    }
    EXPECT_EQ(last_resident, 28);
  }
}

TEST_F(SevenB, RefusesABudgetThatCannotWork) {
  auto r = request(0, Strategy::kStream);
  r.gpu_budget_bytes = minimum_budget(f, r) - 1;
  auto p = make_plan(f, r);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, Errc::kResourceExhausted);
  std::cout << p.error().to_string() << "\n";
  const std::string& m = p.error().message;
  for (const std::string& needle :
       {format_bytes(r.kv_bytes), format_bytes(r.workspace_bytes), format_bytes(f.lm_head_bytes),
        std::string("ring 2 x ") + format_bytes(f.layer_bytes),
        std::to_string(minimum_budget(f, r)), std::to_string(r.gpu_budget_bytes)})
    EXPECT_NE(m.find(needle), std::string::npos) << "'" << needle << "' missing from: " << m;

  r.gpu_budget_bytes = minimum_budget(f, r);
  auto at_min = make_plan(f, r);
  ASSERT_TRUE(at_min) << at_min.error().to_string();
  EXPECT_EQ(at_min->resident_layers, 0);
  EXPECT_EQ(at_min->streamed_layers(), 28);

  // 2 GiB cannot even hold a KV pool for 8 x 4096 tokens.
  auto tiny = make_plan(f, request(2 * kGiB, Strategy::kZeroCopy, 8, 4096));
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.error().code, Errc::kResourceExhausted);
  EXPECT_EQ(tiny.error().message.find("ring"), std::string::npos) << "zero-copy has no ring";
}

TEST_F(SevenB, RefusesMalformedRequests) {
  auto r = request(8 * kGiB, Strategy::kStream);
  r.gpu_budget_bytes = 0;
  EXPECT_EQ(make_plan(f, r).error().code, Errc::kInvalidArgument);
  r = request(8 * kGiB, Strategy::kStream);
  r.kv_bytes = 0;
  EXPECT_EQ(make_plan(f, r).error().code, Errc::kInvalidArgument);
  for (int slots : {-1, 0, 1, 5}) {
    r = request(8 * kGiB, Strategy::kStream);
    r.ring_slots = slots;
    EXPECT_EQ(make_plan(f, r).error().code, Errc::kInvalidArgument) << slots;
  }
  EXPECT_EQ(make_plan(ModelFootprint{}, request(8 * kGiB, Strategy::kStream)).error().code,
            Errc::kInvalidArgument);
}

TEST_F(SevenB, ExtraResidentBytesCount) {
  auto r = request(80 * kGiB, Strategy::kStream);
  r.gpu_budget_bytes = 8 * kGiB;
  const int before = make_plan(f, r)->resident_layers;
  r.extra_resident_bytes = 1'100'000'000;  // e.g. an unquantized bf16 lm_head
  auto p = make_plan(f, r);
  ASSERT_TRUE(p);
  EXPECT_LT(p->resident_layers, before);
  EXPECT_EQ(p->extra_bytes, 1'100'000'000u);
  expect_consistent(f, r, *p);
}

TEST(SmallModel, EmbeddingStaysWhenItFitsBesideTheLayers) {
  auto f = *compute_footprint(testing::small_model());
  ASSERT_LT(f.embedding_bytes, f.layer_bytes);
  PlanRequest r;
  r.kv_bytes = 1 << 20;
  r.workspace_bytes = 1 << 20;
  r.strategy = Strategy::kZeroCopy;
  const uint64_t fixed = r.kv_bytes + r.workspace_bytes + f.lm_head_bytes + f.final_norm_bytes;
  // Room for 5 layers and the table, not for 6 layers.
  r.gpu_budget_bytes = fixed + 5 * f.layer_bytes + f.embedding_bytes;
  auto p = make_plan(f, r);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->resident_layers, 5);
  EXPECT_TRUE(p->embedding_resident);
  EXPECT_EQ(p->embedding_bytes_per_token, 0u);
}

}  // namespace
}  // namespace ringserve::offload
