// Small-VRAM mode end to end: a model partly kept in host memory (streamed
// through the ring, read in place, or copied before each layer) must decode
// exactly as the fully resident model does. GEMV tuning is off in every
// engine here, so each runs the same kernels on the same bytes and the
// comparison can be exact: any difference is a streaming bug (a layer read
// before its copy landed, a slot overwritten too early), not rounding.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "cuda/cuda_engine.h"
#include "model/loader.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

using engine::EngineOptions;
using engine::Pipeline;

struct OffloadSetup {
  offload::OffloadMode offload = offload::OffloadMode::kStream;
  Pipeline pipeline = Pipeline::kGraphs;
  int ring_slots = 2;
};

cuda::CudaTuning exact_tuning() {
  cuda::CudaTuning t;
  t.tune_gemv = false;
  t.prefill_weights = cuda::CudaTuning::PrefillWeights::kDequantPerLayer;
  return t;
}

EngineOptions base_options(int max_batch) {
  EngineOptions o;
  o.backend = engine::Backend::kCuda;
  o.max_batch = max_batch;
  o.max_context = 256;
  return o;
}

const cuda::CudaEngineStats& stats(const engine::Engine& e) {
  return dynamic_cast<const cuda::CudaEngineIntrospection&>(e).stats();
}

// The fixture checkpoints have 2 layers. Streaming k layers through an
// N-slot ring saves memory only when k > N, so the planner never streams a
// 2-layer model (it is cheaper to keep both resident); the fixtures' layers
// are repeated to a depth where a resident prefix and a streamed suffix
// exist. The comparison is with the resident engine on the same weights.
model::ModelWeights deepened(model::ModelWeights w, int layers) {
  const auto original = w.layers;
  w.layers.clear();
  for (int i = 0; i < layers; ++i) w.layers.push_back(original[i % original.size()]);
  w.config.num_layers = layers;
  return w;
}

// A budget under which the engine keeps some layers in host memory and some
// on the GPU. The planner decides; the test only searches (grow until
// accepted, then bisect between refused and fully resident).
std::unique_ptr<engine::Engine> make_partly_offloaded(const model::ModelWeights& w, int max_batch,
                                                      const OffloadSetup& setup) {
  EngineOptions o = base_options(max_batch);
  o.offload = setup.offload;
  o.pipeline = setup.pipeline;
  o.ring_slots = setup.ring_slots;
  // <0: refused, 0: partly offloaded (kept in `found`), >0: every layer resident.
  std::unique_ptr<engine::Engine> found;
  auto probe = [&](uint64_t budget) {
    o.gpu_memory_bytes = budget;
    auto e = cuda::create_cuda_engine(o, w, exact_tuning());
    if (!e) {
      EXPECT_EQ(e.error().code, Errc::kResourceExhausted) << e.error().to_string();
      return -1;
    }
    const auto& s = stats(**e);
    if (s.streamed_layers == 0) return 1;
    if (s.resident_layers == 0) return -1;
    found = std::move(e).value();
    return 0;
  };
  uint64_t lo = 1 << 20, hi = lo;
  int r = -1;
  while ((r = probe(hi)) < 0 && hi < (uint64_t{64} << 30)) {
    lo = hi;
    hi *= 2;
  }
  while (r != 0 && hi - lo > 4096) {
    const uint64_t mid = lo + (hi - lo) / 2;
    r = probe(mid);
    (r < 0 ? lo : hi) = mid;
  }
  EXPECT_TRUE(found) << "no budget kept some layers on the GPU and others in host memory";
  return found;
}

std::vector<std::vector<int32_t>> prompts(int n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> tok(0, vocab - 1);
  std::vector<std::vector<int32_t>> out(n);
  for (int i = 0; i < n; ++i) {
    out[i].resize(5 + 7 * i);
    for (auto& t : out[i]) t = tok(rng);
  }
  return out;
}

// Runs the same greedy batch on both engines, comparing every token and
// the logits of every row after each step.
void expect_same_decode(engine::Engine& want, engine::Engine& got, int batch, int steps) {
  const auto ps = prompts(batch, want.info().vocab_size, 7);
  for (auto* e : {&want, &got})
    for (int i = 0; i < batch; ++i)
      ASSERT_TRUE(e->add({static_cast<uint64_t>(i + 1), ps[i], steps, {}}));
  for (int s = 0; s < steps; ++s) {
    auto a = want.step(), b = got.step();
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->tokens.size(), b->tokens.size());
    for (size_t i = 0; i < a->tokens.size(); ++i)
      ASSERT_EQ(a->tokens[i].token, b->tokens[i].token) << "step " << s << " row " << i;
    for (int row = 0; row < static_cast<int>(a->tokens.size()); ++row) {
      auto la = dynamic_cast<const cuda::CudaEngineIntrospection&>(want).last_logits(row);
      auto lb = dynamic_cast<const cuda::CudaEngineIntrospection&>(got).last_logits(row);
      ASSERT_TRUE(la && lb);
      ASSERT_EQ(0, std::memcmp(la->data(), lb->data(), la->size() * sizeof(float)))
          << "step " << s << " row " << row << ": logits differ";
    }
  }
}

class OffloadFixture : public ::testing::TestWithParam<std::tuple<std::string, OffloadSetup>> {};

TEST_P(OffloadFixture, DecodesLikeTheResidentModel) {
  const auto& [name, setup] = GetParam();
  auto loaded = model::load_model(fixture_path("models/" + name).string(), {});
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  const auto w = deepened(std::move(loaded).value(), 8);
  auto resident = cuda::create_cuda_engine(base_options(3), w, exact_tuning());
  ASSERT_TRUE(resident) << resident.error().to_string();
  auto offloaded = make_partly_offloaded(w, 3, setup);
  ASSERT_TRUE(offloaded);
  const auto& s = stats(*offloaded);
  EXPECT_GT(s.streamed_bytes_per_step, 0u);
  EXPECT_GE(s.resident_layers, 1);
  EXPECT_FALSE(s.plan_lines.empty());
  expect_same_decode(**resident, *offloaded, 3, 12);
}

std::string setup_name(const OffloadSetup& s) {
  return std::string(offload::offload_mode_name(s.offload)) + "_" +
         engine::pipeline_name(s.pipeline) + "_" + std::to_string(s.ring_slots);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, OffloadFixture,
    ::testing::Combine(
        ::testing::Values("tiny-qwen2-int8exact", "tiny-qwen2"),
        ::testing::Values(OffloadSetup{offload::OffloadMode::kStream, Pipeline::kGraphs, 2},
                          OffloadSetup{offload::OffloadMode::kStream, Pipeline::kGraphs, 3},
                          OffloadSetup{offload::OffloadMode::kStream, Pipeline::kAsync, 2},
                          OffloadSetup{offload::OffloadMode::kZeroCopy, Pipeline::kGraphs, 2},
                          OffloadSetup{offload::OffloadMode::kStream, Pipeline::kPinned, 2},
                          OffloadSetup{offload::OffloadMode::kStream, Pipeline::kNaive, 2},
                          OffloadSetup{offload::OffloadMode::kAuto, Pipeline::kGraphs, 2})),
    [](const auto& info) {
      std::string n = std::get<0>(info.param) + "_" + setup_name(std::get<1>(info.param));
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

// The 7B's own layer shapes, 2 layers: one on the GPU, one read in place
// from host memory. (Streaming needs more layers than ring slots: below.)
TEST(Offload7bShapes, ZeroCopyDecodesLikeTheResidentModel) {
  auto w = model::load_model("synthetic:deepseek-r1-distill-qwen-7b,layers=2", {});
  ASSERT_TRUE(w) << w.error().to_string();
  auto resident = cuda::create_cuda_engine(base_options(4), *w, exact_tuning());
  ASSERT_TRUE(resident) << resident.error().to_string();
  auto offloaded = make_partly_offloaded(
      *w, 4, OffloadSetup{offload::OffloadMode::kZeroCopy, Pipeline::kGraphs, 2});
  ASSERT_TRUE(offloaded);
  EXPECT_GE(stats(*offloaded).streamed_layers, 1);
  expect_same_decode(**resident, *offloaded, 4, 6);
}

// Six 7B-shaped layers: enough for the stream strategy to keep a prefix on
// the GPU and stream the rest through a 2-slot ring that wraps around.
TEST(Offload7bShapes, StreamsASuffixLikeTheResidentModel) {
  auto w = model::load_model("synthetic:deepseek-r1-distill-qwen-7b,layers=6", {});
  ASSERT_TRUE(w) << w.error().to_string();
  auto resident = cuda::create_cuda_engine(base_options(4), *w, exact_tuning());
  ASSERT_TRUE(resident) << resident.error().to_string();
  auto offloaded = make_partly_offloaded(
      *w, 4, OffloadSetup{offload::OffloadMode::kStream, Pipeline::kGraphs, 2});
  ASSERT_TRUE(offloaded);
  EXPECT_GE(stats(*offloaded).resident_layers, 1);
  EXPECT_GE(stats(*offloaded).streamed_layers, 3);
  expect_same_decode(**resident, *offloaded, 4, 6);
}

TEST(Offload, RefusesABudgetThatCannotWork) {
  auto w = model::load_model(fixture_path("models/tiny-qwen2").string(), {});
  ASSERT_TRUE(w);
  EngineOptions o = base_options(2);
  o.gpu_memory_bytes = 4096;
  o.offload = offload::OffloadMode::kStream;
  auto e = cuda::create_cuda_engine(o, *w, exact_tuning());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Errc::kResourceExhausted);
  EXPECT_NE(e.error().message.find("KV"), std::string::npos) << e.error().message;
}

TEST(Offload, PipelinesDecodeAlikeWhenResident) {
  auto w = model::load_model(fixture_path("models/tiny-qwen2-int8exact").string(), {});
  ASSERT_TRUE(w);
  auto want = cuda::create_cuda_engine(base_options(2), *w, exact_tuning());
  ASSERT_TRUE(want);
  for (Pipeline p : {Pipeline::kNaive, Pipeline::kPinned, Pipeline::kAsync}) {
    EngineOptions o = base_options(2);
    o.pipeline = p;
    auto got = cuda::create_cuda_engine(o, *w, exact_tuning());
    ASSERT_TRUE(got) << got.error().to_string();
    auto fresh = cuda::create_cuda_engine(base_options(2), *w, exact_tuning());
    ASSERT_TRUE(fresh);
    SCOPED_TRACE(engine::pipeline_name(p));
    expect_same_decode(**fresh, **got, 2, 8);
  }
}

}  // namespace
}  // namespace ringserve::testing
