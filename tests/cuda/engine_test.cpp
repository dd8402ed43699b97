// The CUDA engine end to end: against the float64 golden outputs of the
// fixture models, against the CPU reference engine on random models with the
// 7B's layer shapes, and through its API contract.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "attention.h"
#include "cuda/cuda_engine.h"
#include "engine/cpu_engine.h"
#include "model/loader.h"
#include "model/synthetic.h"
#include "model/tensor_source.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

using engine::EngineOptions;
using engine::SequenceSpec;

struct GoldenStep {
  std::vector<int32_t> ids;
  std::vector<double> logits;
};
struct GoldenCase {
  std::vector<int32_t> prompt, greedy;
  std::vector<double> first_logits;
  std::vector<GoldenStep> steps;
};

std::vector<GoldenCase> load_golden(const std::string& model) {
  const auto json =
      nlohmann::json::parse(read_file(fixture_path("models/" + model + "/golden.json")));
  std::vector<GoldenCase> cases;
  for (const auto& c : json.at("cases")) {
    GoldenCase g{c.at("prompt").get<std::vector<int32_t>>(),
                 c.at("greedy").get<std::vector<int32_t>>(),
                 c.at("first_logits").get<std::vector<double>>(),
                 {}};
    for (const auto& s : c.at("step_top5"))
      g.steps.push_back(
          {s.at("ids").get<std::vector<int32_t>>(), s.at("logits").get<std::vector<double>>()});
    cases.push_back(std::move(g));
  }
  return cases;
}

// The fixture with its bf16 output head (as the CPU reference uses it).
model::ModelWeights load_fixture(const std::string& name) {
  const auto dir = fixture_path("models/" + name);
  auto weights = model::load_model(dir.string(), {});
  EXPECT_TRUE(weights) << weights.error().to_string();
  if (weights->lm_head_bf16.rows > 0) return std::move(weights).value();
  auto source = model::TensorSource::open_dir(dir);
  EXPECT_TRUE(source);
  auto view = source->get("lm_head.weight");
  EXPECT_TRUE(view);
  auto& h = weights->lm_head_bf16;
  h.rows = static_cast<int>(view->shape[0]);
  h.cols = static_cast<int>(view->shape[1]);
  h.bf16.resize(view->bytes.size() / 2);
  std::memcpy(h.bf16.data(), view->bytes.data(), view->bytes.size());
  return std::move(weights).value();
}

std::unique_ptr<engine::Engine> make_cuda(model::ModelWeights w, int max_batch = 8,
                                          cuda::CudaTuning tuning = {},
                                          engine::Pipeline pipeline = engine::Pipeline::kGraphs,
                                          int max_context = 1024) {
  EngineOptions o;
  o.backend = engine::Backend::kCuda;
  o.max_batch = max_batch;
  o.max_context = max_context;
  o.pipeline = pipeline;
  auto e = cuda::create_cuda_engine(o, std::move(w), tuning);
  EXPECT_TRUE(e) << e.error().to_string();
  return e ? std::move(e).value() : nullptr;
}

// A prompt of n token ids drawn uniformly from the 7B's vocabulary.
std::vector<int32_t> random_prompt(std::mt19937_64& rng, size_t n) {
  std::uniform_int_distribution<int> tok(0, 152063);
  std::vector<int32_t> p(n);
  for (auto& t : p) t = tok(rng);
  return p;
}

const cuda::CudaEngineIntrospection& introspect(const engine::Engine& e) {
  return dynamic_cast<const cuda::CudaEngineIntrospection&>(e);
}

double rel_l2(const std::vector<float>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// Greedy tokens must equal golden where golden's top-1 minus top-2 margin
// exceeds 0.05; elsewhere the token must be one of golden's top 2, and if it
// is the other one the continuations legitimately part, so checking stops.
void expect_golden_greedy(const std::vector<int32_t>& got, const GoldenCase& c, size_t index) {
  ASSERT_EQ(got.size(), c.greedy.size());
  for (size_t p = 0; p < got.size(); ++p) {
    const auto& s = c.steps[p];
    const double margin = s.logits[0] - s.logits[1];
    if (margin > 0.05) {
      ASSERT_EQ(got[p], c.greedy[p]) << "case " << index << " step " << p << " margin " << margin;
    } else {
      ASSERT_TRUE(got[p] == s.ids[0] || got[p] == s.ids[1])
          << "case " << index << " step " << p << ": " << got[p] << " not in golden top 2";
      if (got[p] != c.greedy[p]) return;
    }
  }
}

double max_abs(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    m = std::max(m, std::abs(a[i] - b[i]));
  }
  return m;
}

// First-step logits against golden, with the bounds the CPU reference meets
// (tests/engine/golden_test.cpp). tiny-qwen2-int8exact: only arithmetic
// differs from the float64 golden, so the relative L2 bound 1e-2
// applies directly. tiny-qwen2: its bf16 weights are rounded to INT8, and
// that rounding alone puts the CPU reference engine at 0.0093-0.0116
// relative L2 from golden on these five prompts (measured; max |diff|
// 0.014-0.017), so a 1e-2 bound against golden tests the INT8 format, not
// the engine. There the CUDA engine must (1) stay
// within the CPU golden test's logit bound (max |logit - golden| <= 0.03)
// and (2) agree with the CPU engine on the same INT8 weights within the
// relative L2 bound 1e-2: the engine's own error, which is what the issue's
// bound is about.
void expect_first_logits(const std::string& fixture, const std::vector<float>& got,
                         const GoldenCase& c, size_t index) {
  if (fixture == "tiny-qwen2-int8exact") {
    EXPECT_LE(rel_l2(got, c.first_logits), 1e-2) << "case " << index;
    return;
  }
  EXPECT_LE(max_abs(got, c.first_logits), 0.03) << "case " << index;
  EngineOptions co;
  co.backend = engine::Backend::kCpu;
  co.max_batch = 1;
  co.max_context = 1024;
  auto cpu = engine::CpuEngine::create(co, load_fixture(fixture));
  ASSERT_TRUE(cpu) << cpu.error().to_string();
  auto all = (*cpu)->model().forward_all_logits(c.prompt);
  ASSERT_TRUE(all) << all.error().to_string();
  const std::vector<double> want(all->end() - static_cast<std::ptrdiff_t>(c.first_logits.size()),
                                 all->end());
  EXPECT_LE(rel_l2(got, want), 1e-2) << "case " << index << " (vs the CPU engine)";
}

class CudaGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaGolden, GreedyOneSequenceAtATime) {
  const auto cases = load_golden(GetParam());
  auto e = make_cuda(load_fixture(GetParam()));
  ASSERT_NE(e, nullptr);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    ASSERT_TRUE(e->add({i + 1, c.prompt, static_cast<int>(c.greedy.size()), {}}));
    std::vector<int32_t> out;
    while (out.size() < c.greedy.size()) {
      auto step = e->step();
      ASSERT_TRUE(step) << step.error().to_string();
      ASSERT_EQ(step->tokens.size(), 1u);
      EXPECT_EQ(step->tokens[0].from_prefill, out.empty());
      out.push_back(step->tokens[0].token);
      if (out.size() == 1) {
        auto logits = introspect(*e).last_logits(0);
        ASSERT_TRUE(logits);
        expect_first_logits(GetParam(), *logits, c, i);
      }
    }
    e->release(i + 1);
    expect_golden_greedy(out, c, i);
  }
  EXPECT_EQ(e->kv_usage().blocks_used, 0);
}

TEST_P(CudaGolden, AllCasesBatchedTogether) {
  const auto cases = load_golden(GetParam());
  auto e = make_cuda(load_fixture(GetParam()), static_cast<int>(cases.size()));
  ASSERT_NE(e, nullptr);
  for (size_t i = 0; i < cases.size(); ++i)
    ASSERT_TRUE(e->add({i, cases[i].prompt, static_cast<int>(cases[i].greedy.size()), {}}));
  std::vector<std::vector<int32_t>> out(cases.size());
  for (size_t s = 0; s < cases[0].greedy.size(); ++s) {
    auto step = e->step();
    ASSERT_TRUE(step) << step.error().to_string();
    EXPECT_EQ(step->tokens.size(), cases.size());
    for (const auto& t : step->tokens) out[t.id].push_back(t.token);
  }
  for (size_t i = 0; i < cases.size(); ++i) expect_golden_greedy(out[i], cases[i], i);
}

// Runs the same two greedy prompts on both engines for `steps` steps: the
// tokens must match, and with logit_tol >= 0 each row's logits too (relative
// L2, against a's).
void expect_engines_agree(engine::Engine& a, engine::Engine& b, const std::vector<int32_t>& p1,
                          const std::vector<int32_t>& p2, int steps, double logit_tol) {
  for (auto* e : {&a, &b}) {
    ASSERT_TRUE(e->add({1, p1, steps, {}}));
    ASSERT_TRUE(e->add({2, p2, steps, {}}));
  }
  for (int s = 0; s < steps; ++s) {
    auto ra = a.step(), rb = b.step();
    ASSERT_TRUE(ra && rb);
    ASSERT_EQ(ra->tokens.size(), rb->tokens.size());
    for (size_t i = 0; i < ra->tokens.size(); ++i)
      EXPECT_EQ(ra->tokens[i].token, rb->tokens[i].token) << "step " << s;
    if (logit_tol < 0) continue;
    for (int row = 0; row < 2; ++row) {
      auto la = introspect(a).last_logits(row), lb = introspect(b).last_logits(row);
      ASSERT_TRUE(la && lb);
      const std::vector<double> want(la->begin(), la->end());
      EXPECT_LE(rel_l2(*lb, want), logit_tol) << "step " << s << " row " << row;
    }
  }
}

// Programmatic dependent launch changes only when kernels start, never what
// they compute: the same greedy tokens, and logits equal up to the summation
// order of the (separately tuned) GEMV shapes.
TEST_P(CudaGolden, PdlAndPlainLaunchesAgree) {
  const auto cases = load_golden(GetParam());
  cuda::CudaTuning without_pdl;
  without_pdl.pdl = false;
  auto a = make_cuda(load_fixture(GetParam()), 2, without_pdl);
  auto b = make_cuda(load_fixture(GetParam()), 2);  // PDL is the default
  ASSERT_TRUE(a && b);
  expect_engines_agree(*a, *b, cases[2].prompt, cases[0].prompt, 12, 1e-4);
}

// The fused decode attention (context-sized splits, merged by the last
// block; the default) and the previous split + combine kernels compute the
// same attention: same greedy tokens, logits equal up to summation order.
// Also run under graphs, so the fused path's split counters must come back
// to zero after every replay.
// Both without clusters (CudaTuning::attention_cluster = 0), the path every
// GPU before sm_90 takes.
TEST_P(CudaGolden, FusedAndSplitCombineAttentionAgree) {
  const auto cases = load_golden(GetParam());
  cuda::CudaTuning fused, old_attention;
  fused.attention_cluster = 0;
  old_attention.attention_cluster = 0;
  old_attention.attention_splits = 0;
  auto a = make_cuda(load_fixture(GetParam()), 2, fused);
  auto b = make_cuda(load_fixture(GetParam()), 2, old_attention);
  ASSERT_TRUE(a && b);
  expect_engines_agree(*a, *b, cases[2].prompt, cases[0].prompt, 24, 1e-4);
}

// RoPE and attention in one kernel on thread block clusters (the default
// on sm_90) against the two-kernel split path, over contexts that grow
// across the graph replays: the same greedy tokens, and logits equal up to
// the attention's summation order. Both rotate with the same arithmetic.
// On tiny-qwen2 the logits differ by up to 1.4e-3 (measured on the H200,
// the same value run after run, and the same before and after the two
// kernels were given that common rotation). The cause was not traced; the
// likeliest is the attention output's rounding to bf16, where a different
// summation order flips the last bit of a few elements.
TEST_P(CudaGolden, ClusterAndSplitAttentionAgree) {
  const auto cases = load_golden(GetParam());
  const auto config = load_fixture(GetParam()).config;
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  if (!kernels::attention_decode_rope_supported(device, 16, config.num_heads, config.num_kv_heads,
                                                config.head_dim))
    GTEST_SKIP() << "no thread block clusters on this GPU";
  cuda::CudaTuning split, eight;
  split.attention_cluster = 0;
  eight.attention_cluster = 8;
  auto a = make_cuda(load_fixture(GetParam()), 2, split);
  // The default: clusters of 16 at these batch sizes (a tiny model's few
  // kv heads fit on any sm_90 GPU's SMs).
  auto b = make_cuda(load_fixture(GetParam()), 2);
  auto c = make_cuda(load_fixture(GetParam()), 2, eight);
  ASSERT_TRUE(a && b && c);
  expect_engines_agree(*a, *b, cases[2].prompt, cases[0].prompt, 24, 3e-3);
  auto a2 = make_cuda(load_fixture(GetParam()), 2, split);
  ASSERT_TRUE(a2);
  expect_engines_agree(*a2, *c, cases[1].prompt, cases[3].prompt, 24, 3e-3);
  // Switching mid-generation: the cluster kernel up to a few tokens past
  // the prompts, the split kernels after (one graph captured for each).
  cuda::CudaTuning switching;
  switching.cluster_attention_max_context =
      static_cast<int>(std::max(cases[2].prompt.size(), cases[0].prompt.size())) + 6;
  auto a3 = make_cuda(load_fixture(GetParam()), 2, split);
  auto d = make_cuda(load_fixture(GetParam()), 2, switching);
  ASSERT_TRUE(a3 && d);
  expect_engines_agree(*a3, *d, cases[2].prompt, cases[0].prompt, 24, 3e-3);
}

TEST_P(CudaGolden, GraphsAndDirectLaunchesAgree) {
  const auto cases = load_golden(GetParam());
  cuda::CudaTuning no_graphs;
  no_graphs.prefill_weights = cuda::CudaTuning::PrefillWeights::kDequantPerLayer;
  auto a = make_cuda(load_fixture(GetParam()), 2);
  auto b = make_cuda(load_fixture(GetParam()), 2, no_graphs, engine::Pipeline::kAsync);
  ASSERT_TRUE(a && b);
  expect_engines_agree(*a, *b, cases[3].prompt, cases[1].prompt, 10, -1);
}

// The int8 weights in 16x64 tiles (the default, where a shape allows) or
// row-major: only where the kernels read each weight changes, so the same
// tokens and the same logits. One side dequantizes the tiles for prefill
// (kernels::int8_to_bf16 on the tiled layout), the other reads its resident
// bf16 copy, made before tiling. Default GEMV shapes on both sides.
TEST_P(CudaGolden, TiledAndRowMajorWeightsAgree) {
  const auto cases = load_golden(GetParam());
  cuda::CudaTuning row_major, tiled;
  row_major.tiled_weights = false;
  row_major.tune_gemv = tiled.tune_gemv = false;
  row_major.prefill_weights = cuda::CudaTuning::PrefillWeights::kResident;
  tiled.prefill_weights = cuda::CudaTuning::PrefillWeights::kDequantPerLayer;
  auto a = make_cuda(load_fixture(GetParam()), 2, row_major);
  auto b = make_cuda(load_fixture(GetParam()), 2, tiled);
  ASSERT_TRUE(a && b);
  expect_engines_agree(*a, *b, cases[1].prompt, cases[3].prompt, 12, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaGolden,
                         ::testing::Values("tiny-qwen2-int8exact", "tiny-qwen2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// Random 2-layer models with the 7B's shapes: CUDA vs the CPU reference.
TEST(CudaVsCpu, SevenBLayerShapesAgree) {
  auto spec = model::load_model("synthetic:deepseek-r1-distill-qwen-7b,layers=2", {});
  ASSERT_TRUE(spec) << spec.error().to_string();
  model::ModelWeights copy = *spec;
  EngineOptions co;
  co.backend = engine::Backend::kCpu;
  co.max_batch = 3;
  co.max_context = 256;
  auto cpu = engine::CpuEngine::create(co, std::move(copy));
  ASSERT_TRUE(cpu) << cpu.error().to_string();
  auto gpu = make_cuda(std::move(spec).value(), 3);
  ASSERT_NE(gpu, nullptr);
  std::mt19937_64 rng(test_seed());
  const int new_tokens = 6;
  for (int len : {1, 9, 40}) {
    const auto prompt = random_prompt(rng, len);
    engine::SamplingParams sp;
    sp.top_logprobs = 2;
    ASSERT_TRUE((*cpu)->add({static_cast<uint64_t>(len), prompt, new_tokens, sp}));
    ASSERT_TRUE(gpu->add({static_cast<uint64_t>(len), prompt, new_tokens, sp}));
    // First-step logits.
    auto first_cpu = (*cpu)->model().forward_all_logits(prompt);
    ASSERT_TRUE(first_cpu);
    std::vector<double> want(first_cpu->end() - 152064, first_cpu->end());
    bool diverged = false;
    for (int s = 0; s < new_tokens; ++s) {
      auto rc = (*cpu)->step();
      auto rg = gpu->step();
      ASSERT_TRUE(rc && rg);
      ASSERT_EQ(rc->tokens.size(), 1u);
      ASSERT_EQ(rg->tokens.size(), 1u);
      if (s == 0) {
        auto logits = introspect(*gpu).last_logits(0);
        ASSERT_TRUE(logits);
        EXPECT_LE(rel_l2(*logits, want), 1e-2) << "prompt of " << len;
      }
      const auto& c = rc->tokens[0];
      const auto& g = rg->tokens[0];
      if (diverged) continue;
      const double margin = c.top[0].logprob - c.top[1].logprob;
      if (margin > 0.05) {
        EXPECT_EQ(g.token, c.token) << "prompt " << len << " step " << s;
      } else {
        EXPECT_TRUE(g.token == c.top[0].token || g.token == c.top[1].token);
      }
      EXPECT_NEAR(g.logprob, c.logprob, 0.05);
      diverged = g.token != c.token;
    }
    (*cpu)->release(len);
    gpu->release(len);
  }
}

// The tiling at the 7B's shapes (every linear tiles there, the output head
// included): tiled against row-major weights, prefill through the tiled
// dequantization on one side.
TEST(CudaTiledWeights, SevenBLayerShapesMatchRowMajor) {
  auto spec = model::load_model("synthetic:deepseek-r1-distill-qwen-7b,layers=2", {});
  ASSERT_TRUE(spec) << spec.error().to_string();
  cuda::CudaTuning row_major, tiled;
  row_major.tiled_weights = false;
  row_major.tune_gemv = tiled.tune_gemv = false;
  tiled.prefill_weights = cuda::CudaTuning::PrefillWeights::kDequantPerLayer;
  auto a = make_cuda(*spec, 2, row_major);
  auto b = make_cuda(std::move(spec).value(), 2, tiled);
  ASSERT_TRUE(a && b);
  std::mt19937_64 rng(test_seed() ^ 0x7113d);
  const auto p1 = random_prompt(rng, 21), p2 = random_prompt(rng, 5);
  expect_engines_agree(*a, *b, p1, p2, 4, 1e-6);
}

// The cluster attention's 128- and 64-key chunks at the 7B's shapes, where
// a block walks more than one 128-key chunk (prompts beyond 2048 tokens in
// clusters of 16): the same first decode step, up to the summation order of
// the online softmax. Only that step is compared, because its context is
// the same in both engines whatever a near-tie does to later tokens.
TEST(CudaAttentionChunks, SevenBLayerShapesAgree) {
  auto spec = model::load_model("synthetic:deepseek-r1-distill-qwen-7b,layers=2", {});
  ASSERT_TRUE(spec) << spec.error().to_string();
  const auto& c = spec->config;
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  if (kernels::attention_decode_rope_resident_clusters(device, 16, 128, c.num_heads, c.num_kv_heads,
                                                       c.head_dim) == 0)
    GTEST_SKIP() << "no clusters of 16 with 128-key chunks on this GPU";
  auto make = [&](int chunk) {
    cuda::CudaTuning t;
    t.tune_gemv = false;
    t.attention_cluster = 16;
    t.attention_chunk = chunk;
    return make_cuda(*spec, 2, t, engine::Pipeline::kGraphs, 4096);
  };
  auto a = make(64), b = make(128);
  ASSERT_TRUE(a && b);
  std::mt19937_64 rng(test_seed() ^ 0xc4a2);
  const auto p1 = random_prompt(rng, 2500), p2 = random_prompt(rng, 2100);
  for (auto* e : {a.get(), b.get()}) {
    ASSERT_TRUE(e->add({1, p1, 4, {}}));
    ASSERT_TRUE(e->add({2, p2, 4, {}}));
    ASSERT_TRUE(e->step());  // prefill: the same kernels in both
  }
  auto ra = a->step(), rb = b->step();
  ASSERT_TRUE(ra && rb);
  for (int row = 0; row < 2; ++row) {
    auto la = introspect(*a).last_logits(row), lb = introspect(*b).last_logits(row);
    ASSERT_TRUE(la && lb);
    const std::vector<double> want(la->begin(), la->end());
    EXPECT_LE(rel_l2(*lb, want), 3e-3) << "row " << row;
  }
}

// Token-for-token agreement of the samplers on equal logits is tested at the
// kernel level (kernels_gpu_test Sampling.DrawsTheCpuSamplersTokens); here the
// engine must be deterministic per (seed, step) and independent of batch-mates.
TEST(CudaEngineSampling, SeededAndIndependentOfTheBatch) {
  auto e = make_cuda(load_fixture("tiny-qwen2-int8exact"), 4);
  ASSERT_NE(e, nullptr);
  engine::SamplingParams sp;
  sp.temperature = 0.9f;
  sp.top_k = 50;
  sp.top_p = 0.95f;
  sp.seed = 77;
  const std::vector<int32_t> prompt = {5, 77, 300, 12};
  auto run = [&](bool with_neighbours, uint64_t seed) {
    auto p = sp;
    p.seed = seed;
    EXPECT_TRUE(e->add({1, prompt, 16, p}));
    if (with_neighbours) {
      EXPECT_TRUE(e->add({2, {9, 9, 9}, 16, sp}));
      EXPECT_TRUE(e->add({3, {1000}, 16, {}}));
    }
    std::vector<int32_t> out;
    for (int s = 0; s < 16; ++s) {
      auto r = e->step();
      EXPECT_TRUE(r);
      for (const auto& t : r->tokens)
        if (t.id == 1) out.push_back(t.token);
    }
    for (uint64_t id : {1, 2, 3}) e->release(id);
    return out;
  };
  const auto a = run(false, 77), b = run(true, 77), c = run(false, 78);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// The two sampling strategies (CudaTuning::sampling) inside the engine: the
// same tokens for every sequence of a mixed batch, greedy, temperature only
// and truncated rows together, step after step.
TEST(CudaEngineSampling, CandidatesAndOneBlockDrawTheSameTokens) {
  cuda::CudaTuning one_block, candidates;
  one_block.sampling = cuda::CudaTuning::Sampling::kOneBlock;
  candidates.sampling = cuda::CudaTuning::Sampling::kCandidates;
  auto a = make_cuda(load_fixture("tiny-qwen2-int8exact"), 4, one_block);
  auto b = make_cuda(load_fixture("tiny-qwen2-int8exact"), 4, candidates);
  ASSERT_TRUE(a && b);
  std::vector<engine::SamplingParams> params(4);
  params[0] = {.temperature = 0.6f, .top_p = 0.95f, .seed = 1};
  params[1] = {.temperature = 0.9f, .top_p = 0.95f, .top_k = 50, .seed = 2};
  params[2] = {.temperature = 1.0f, .seed = 3};
  params[3] = {};  // greedy
  const std::vector<std::vector<int32_t>> prompts = {{5, 77, 300, 12}, {9, 9, 9}, {1000}, {42, 7}};
  auto run = [&](engine::Engine& e) {
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(e.add({i + 1, prompts[i], 64, params[i]}));
    std::vector<std::vector<int32_t>> out(params.size());
    for (int s = 0; s < 20; ++s) {
      auto r = e.step();
      EXPECT_TRUE(r);
      if (!r) break;
      for (const auto& t : r->tokens) out[t.id - 1].push_back(t.token);
    }
    return out;
  };
  const auto want = run(*a), got = run(*b);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << "sequence " << i + 1;
    EXPECT_GE(want[i].size(), 10u) << "sequence " << i + 1;
  }
}

// The same at the 7B's shapes (two layers, the whole 152k vocabulary), where
// the candidates path sorts real gathers and the synthetic model's logits
// are flat enough to reach its fallback: every setting DeepSeek and the
// OpenAI API use by default, step after step. The engines use the default
// GEMV shapes, so their logits are bitwise equal and only the sampler
// differs.
TEST(CudaEngineSampling, SevenBShapesCandidatesAndOneBlockDrawTheSameTokens) {
  auto spec = model::load_model("synthetic:deepseek-r1-distill-qwen-7b,layers=2", {});
  ASSERT_TRUE(spec) << spec.error().to_string();
  cuda::CudaTuning one_block, candidates;
  one_block.sampling = cuda::CudaTuning::Sampling::kOneBlock;
  candidates.sampling = cuda::CudaTuning::Sampling::kCandidates;
  one_block.tune_gemv = candidates.tune_gemv = false;
  auto a = make_cuda(*spec, 4, one_block);
  auto b = make_cuda(std::move(spec).value(), 4, candidates);
  ASSERT_TRUE(a && b);
  std::vector<engine::SamplingParams> params(4);
  params[0] = {.temperature = 0.6f, .top_p = 0.95f, .seed = 11};
  params[1] = {.temperature = 0.7f, .top_p = 0.9f, .top_k = 40, .seed = 12};
  params[2] = {.temperature = 1.0f, .seed = 13};
  params[3] = {.temperature = 1.0f, .top_p = 0.95f, .seed = 14, .top_logprobs = 3};
  std::mt19937_64 rng(test_seed() ^ 0x5a3b1e);
  std::vector<std::vector<int32_t>> prompts(4);
  for (size_t i = 0; i < prompts.size(); ++i) prompts[i] = random_prompt(rng, 3 + 7 * i);
  constexpr int kSteps = 24;
  auto run = [&](engine::Engine& e) {
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(e.add({i + 1, prompts[i], kSteps + 8, params[i]}));
    std::vector<std::vector<int32_t>> out(params.size());
    std::vector<std::vector<float>> logprobs(params.size());
    for (int s = 0; s < kSteps; ++s) {
      auto r = e.step();
      EXPECT_TRUE(r);
      if (!r) break;
      for (const auto& t : r->tokens) {
        out[t.id - 1].push_back(t.token);
        logprobs[t.id - 1].push_back(t.logprob);
      }
    }
    for (size_t i = 0; i < params.size(); ++i) e.release(i + 1);
    return std::pair{out, logprobs};
  };
  const auto [want, want_lp] = run(*a);
  const auto [got, got_lp] = run(*b);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << "sequence " << i + 1;
    EXPECT_EQ(got_lp[i], want_lp[i]) << "sequence " << i + 1;
    EXPECT_EQ(want[i].size(), static_cast<size_t>(kSteps)) << "sequence " << i + 1;
  }
  // And again on the same engine: a seeded request repeats.
  const auto [again, again_lp] = run(*b);
  for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(again[i], got[i]) << "sequence " << i + 1;
}

TEST(CudaEngineApi, RejectsTuningOutOfRange) {
  cuda::CudaTuning t;
  t.attention_chunk = 32;
  EngineOptions o;
  o.backend = engine::Backend::kCuda;
  o.max_batch = 2;
  o.max_context = 256;
  auto e = cuda::create_cuda_engine(o, load_fixture("tiny-qwen2"), t);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Errc::kInvalidArgument);
  EXPECT_NE(e.error().to_string().find("attention_chunk"), std::string::npos);
}

TEST(CudaEngineApi, RejectsBadSequencesAndAccountsKv) {
  auto e = make_cuda(load_fixture("tiny-qwen2"), 2);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->info().backend, "cuda");
  EXPECT_EQ(e->add({1, {}, 4, {}}).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(e->add({1, {1, 1024}, 4, {}}).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(e->add({1, {1, -1}, 4, {}}).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(e->add({1, {1, 2}, 5000, {}}).error().code, Errc::kTooLarge);
  EXPECT_FALSE(e->fits_ever(0, 1));
  ASSERT_TRUE(e->add({1, {1, 2, 3}, 4, {}}));
  EXPECT_EQ(e->add({1, {1, 2, 3}, 4, {}}).error().code, Errc::kInvalidArgument);
  ASSERT_TRUE(e->add({2, {4}, 4, {}}));
  EXPECT_EQ(e->add({3, {4}, 4, {}}).error().code, Errc::kResourceExhausted);
  EXPECT_FALSE(e->fits_now(1, 1));
  EXPECT_GT(e->kv_usage().blocks_used, 0);
  auto r = e->step();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->prefill_tokens, 4);
  EXPECT_EQ(r->tokens.size(), 2u);
  r = e->step();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->decode_tokens, 2);
  e->release(1);
  e->release(2);
  e->release(99);
  EXPECT_EQ(e->kv_usage().blocks_used, 0);
  EXPECT_EQ(e->active_sequences(), 0u);
  r = e->step();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->tokens.empty());
}

}  // namespace
}  // namespace ringserve::testing
