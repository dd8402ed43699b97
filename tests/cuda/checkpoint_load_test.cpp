// Loading a bf16 checkpoint straight to the GPU (read by io::FileReader,
// quantized by the GPU) must give the model the host loader gives, whether
// every layer is resident or some are offloaded, and must refuse damaged
// files with a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cuda/cuda_engine.h"
#include "model/loader.h"
#include "model/synthetic.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

using engine::EngineOptions;

cuda::CudaTuning exact_tuning() {
  cuda::CudaTuning t;
  t.tune_gemv = false;
  t.prefill_weights = cuda::CudaTuning::PrefillWeights::kDequantPerLayer;
  return t;
}

EngineOptions options(uint64_t gpu_memory = 0) {
  EngineOptions o;
  o.backend = engine::Backend::kCuda;
  o.max_batch = 2;
  o.max_context = 128;
  o.gpu_memory_bytes = gpu_memory;
  o.offload = offload::OffloadMode::kStream;
  return o;
}

const cuda::CudaEngineStats& stats(const engine::Engine& e) {
  return dynamic_cast<const cuda::CudaEngineIntrospection&>(e).stats();
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    num += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Greedy tokens must match; logits within 1e-5 (the GPU and CPU quantizers
// follow the same rule, but a division may round differently at a tie).
void expect_same_decode(engine::Engine& want, engine::Engine& got, int steps) {
  const std::vector<int32_t> p1{1, 2, 3, 4, 5, 6, 7}, p2{9, 8, 7};
  for (auto* e : {&want, &got}) {
    ASSERT_TRUE(e->add({1, p1, steps, {}}));
    ASSERT_TRUE(e->add({2, p2, steps, {}}));
  }
  for (int s = 0; s < steps; ++s) {
    auto a = want.step(), b = got.step();
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->tokens.size(), b->tokens.size());
    for (size_t i = 0; i < a->tokens.size(); ++i) {
      EXPECT_EQ(a->tokens[i].token, b->tokens[i].token) << "step " << s << " row " << i;
      auto la = dynamic_cast<const cuda::CudaEngineIntrospection&>(want).last_logits(i);
      auto lb = dynamic_cast<const cuda::CudaEngineIntrospection&>(got).last_logits(i);
      ASSERT_TRUE(la && lb);
      EXPECT_LE(rel_l2(*lb, *la), 1e-5) << "step " << s << " row " << i;
    }
  }
}

class GpuLoad : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuLoad, MatchesTheHostLoader) {
  const auto dir = fixture_path("models/" + GetParam()).string();
  auto host = model::load_model(dir, {});
  ASSERT_TRUE(host) << host.error().to_string();
  auto want = cuda::create_cuda_engine(options(), std::move(host).value(), exact_tuning());
  ASSERT_TRUE(want) << want.error().to_string();
  auto got = cuda::load_cuda_engine(options(), dir, {}, exact_tuning());
  ASSERT_TRUE(got) << got.error().to_string();
  const auto& s = stats(**got);
  EXPECT_GT(s.load_bytes, 0u) << "the GPU loader did not run";
  EXPECT_FALSE(s.load_method.empty());
  expect_same_decode(**want, **got, 10);
}

// The fixture's shapes at 8 layers (random bf16 weights from the project's
// writer): a 2-layer model never streams, because streaming k layers through
// an N-slot ring saves memory only when k > N (offload_test.cpp).
TEST_P(GpuLoad, OffloadedLayersMatchTheResidentLoad) {
  auto config = model::load_config(fixture_path("models/" + GetParam()).string());
  ASSERT_TRUE(config) << config.error().to_string();
  config->num_layers = 8;
  TempDir tmp;
  ASSERT_TRUE(model::write_random_hf_checkpoint(*config, tmp.path(), 11, model::DType::kBF16, 2));
  const auto dir = tmp.path().string();
  auto want = cuda::load_cuda_engine(options(), dir, {}, exact_tuning());
  ASSERT_TRUE(want) << want.error().to_string();
  // Bisect between a refused budget and a fully resident one for a budget
  // that keeps a prefix on the GPU and streams the rest.
  uint64_t lo = 1 << 20, hi = uint64_t{1} << 30;
  while (hi - lo > 4096) {
    const uint64_t mid = lo + (hi - lo) / 2;
    auto got = cuda::load_cuda_engine(options(mid), dir, {}, exact_tuning());
    if (!got || stats(**got).resident_layers == 0) {
      lo = mid;
    } else if (stats(**got).streamed_layers == 0) {
      hi = mid;
    } else {
      EXPECT_GT(stats(**got).load_bytes, 0u) << "the GPU loader did not run";
      expect_same_decode(**want, **got, 10);
      return;
    }
  }
  FAIL() << "no budget kept some layers on the GPU and others in host memory";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GpuLoad, ::testing::Values("tiny-qwen2-int8exact", "tiny-qwen2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(GpuLoad, RefusesATruncatedCheckpoint) {
  TempDir tmp;
  const auto src = fixture_path("models/tiny-qwen2");
  for (const char* f : {"config.json", "model.safetensors"})
    std::filesystem::copy_file(src / f, tmp.path() / f);
  const auto st = tmp.path() / "model.safetensors";
  std::filesystem::resize_file(st, std::filesystem::file_size(st) - 1000);
  auto e = cuda::load_cuda_engine(options(), tmp.path().string(), {}, exact_tuning());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Errc::kCorruptData) << e.error().to_string();
}

TEST(GpuLoad, RefusesACorruptHeader) {
  TempDir tmp;
  const auto src = fixture_path("models/tiny-qwen2");
  for (const char* f : {"config.json", "model.safetensors"})
    std::filesystem::copy_file(src / f, tmp.path() / f);
  {
    std::fstream f(tmp.path() / "model.safetensors",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12);
    f.write("\xff\xfe{{", 4);  // inside the JSON header
  }
  auto e = cuda::load_cuda_engine(options(), tmp.path().string(), {}, exact_tuning());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Errc::kCorruptData) << e.error().to_string();
}

}  // namespace
}  // namespace ringserve::testing
