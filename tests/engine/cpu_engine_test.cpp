// The CPU engine's bookkeeping (admission, KV blocks, release) and its
// batching invariance, on a small synthetic model.
#include <gtest/gtest.h>

#include <vector>

#include "engine/cpu_engine.h"
#include "engine/factory.h"
#include "model/synthetic.h"

namespace ringserve::engine {
namespace {

model::ModelConfig small_config() {
  model::ModelConfig c;
  c.name = "test-small";
  c.model_type = "qwen2";
  c.hidden_size = 64;
  c.intermediate_size = 96;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 300;
  c.max_position_embeddings = 256;
  c.rope_theta = 10000.0;
  c.rms_norm_eps = 1e-6;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  return c;
}

model::ModelWeights small_weights() {
  auto w = model::make_synthetic_weights(small_config(), 1234, 1);
  EXPECT_TRUE(w) << w.error().to_string();
  return std::move(w).value();
}

std::unique_ptr<CpuEngine> make(EngineOptions options) {
  auto engine = CpuEngine::create(options, small_weights());
  EXPECT_TRUE(engine) << engine.error().to_string();
  return engine ? std::move(engine).value() : nullptr;
}

std::vector<int32_t> prompt(int n, int salt) {
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 3 + (i * 37 + salt * 101) % 290;
  return p;
}

TEST(CpuEngine, AdmissionCountsBlocksAndBatchSlots) {
  EngineOptions o;
  o.max_batch = 2;
  o.kv_blocks = 10;
  o.block_tokens = 16;
  o.max_context = 200;
  o.threads = 1;
  auto e = make(o);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kv_usage().blocks_total, 10);
  EXPECT_EQ(e->kv_usage().block_tokens, 16);
  EXPECT_TRUE(e->fits_ever(100, 60));   // 160 tokens = 10 blocks
  EXPECT_FALSE(e->fits_ever(100, 61));  // 11 blocks
  EXPECT_FALSE(e->fits_ever(150, 51));  // past max_context
  EXPECT_FALSE(e->fits_ever(0, 10));
  EXPECT_FALSE(e->fits_ever(10, -1));

  ASSERT_TRUE(e->add({1, prompt(50, 1), 30, {}}));  // 80 tokens: 5 blocks
  EXPECT_EQ(e->kv_usage().blocks_used, 5);
  EXPECT_FALSE(e->fits_now(50, 40));  // 6 blocks, 5 free
  EXPECT_TRUE(e->fits_now(50, 30));
  EXPECT_TRUE(e->fits_ever(50, 40));
  auto too_big_now = e->add({2, prompt(50, 2), 40, {}});
  ASSERT_FALSE(too_big_now);
  EXPECT_EQ(too_big_now.error().code, Errc::kResourceExhausted);

  ASSERT_TRUE(e->add({2, prompt(10, 2), 6, {}}));  // 1 block
  EXPECT_EQ(e->kv_usage().blocks_used, 6);
  EXPECT_FALSE(e->fits_now(1, 1));  // no batch slot left
  auto no_slot = e->add({3, prompt(1, 3), 1, {}});
  ASSERT_FALSE(no_slot);
  EXPECT_EQ(no_slot.error().code, Errc::kResourceExhausted);

  e->release(1);
  EXPECT_EQ(e->kv_usage().blocks_used, 1);
  EXPECT_EQ(e->active_sequences(), 1u);
  EXPECT_TRUE(e->fits_now(50, 40));
  e->release(2);
  e->release(2);    // already gone: ignored
  e->release(999);  // never known: ignored
  EXPECT_EQ(e->kv_usage().blocks_used, 0);
  EXPECT_EQ(e->active_sequences(), 0u);
}

TEST(CpuEngine, AddRejectsMalformedSequences) {
  EngineOptions o;
  o.threads = 1;
  auto e = make(o);
  ASSERT_NE(e, nullptr);
  auto code = [&](SequenceSpec spec) {
    auto st = e->add(spec);
    return st ? Errc::kOk : st.error().code;
  };
  EXPECT_EQ(code({1, {}, 5, {}}), Errc::kInvalidArgument);
  EXPECT_EQ(code({1, {5, 300}, 5, {}}), Errc::kInvalidArgument);  // vocab is 300
  EXPECT_EQ(code({1, {5, -1}, 5, {}}), Errc::kInvalidArgument);
  EXPECT_EQ(code({1, {5}, -2, {}}), Errc::kInvalidArgument);
  SamplingParams too_many_logprobs;
  too_many_logprobs.top_logprobs = 21;
  EXPECT_EQ(code({1, {5}, 5, too_many_logprobs}), Errc::kInvalidArgument);
  EXPECT_EQ(code({1, prompt(200, 1), 57, {}}), Errc::kTooLarge);  // context 256
  EXPECT_EQ(code({1, {5}, 5, {}}), Errc::kOk);
  EXPECT_EQ(code({1, {6}, 5, {}}), Errc::kInvalidArgument);  // duplicate id
  EXPECT_EQ(e->active_sequences(), 1u);
  EXPECT_EQ(e->kv_usage().blocks_used, 1);
}

TEST(CpuEngine, EmptyStepReturnsNothing) {
  EngineOptions o;
  o.threads = 1;
  auto e = make(o);
  ASSERT_NE(e, nullptr);
  auto r = e->step();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->tokens.empty());
  EXPECT_EQ(r->prefill_tokens, 0);
}

struct Trace {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  bool operator==(const Trace&) const = default;
};

// Decodes `steps` tokens of `spec` alone in a fresh engine.
Trace run_alone(const SequenceSpec& spec, int steps, int threads) {
  EngineOptions o;
  o.threads = threads;
  auto e = make(o);
  Trace t;
  EXPECT_TRUE(e->add(spec));
  for (int s = 0; s < steps; ++s) {
    auto r = e->step();
    EXPECT_TRUE(r);
    t.tokens.push_back(r->tokens.at(0).token);
    t.logprobs.push_back(r->tokens.at(0).logprob);
    EXPECT_EQ(r->tokens.at(0).from_prefill, s == 0);
  }
  return t;
}

TEST(CpuEngine, SequenceDecodesTheSameAloneAndInABatch) {
  SamplingParams greedy;
  SamplingParams sampled;
  sampled.temperature = 0.9f;
  sampled.top_p = 0.9f;
  sampled.seed = 77;
  for (const auto& params : {greedy, sampled}) {
    const SequenceSpec target{10, prompt(23, 1), 20, params};
    const Trace alone = run_alone(target, 20, 1);

    // In a batch of 3 with 2 threads: one neighbour from the start, one
    // joining while the target decodes (its prefill shares that step), and
    // the first neighbour leaving early.
    EngineOptions o;
    o.threads = 2;
    auto e = make(o);
    ASSERT_TRUE(e->add({11, prompt(40, 2), 30, {}}));
    ASSERT_TRUE(e->add(target));
    Trace batched;
    for (int s = 0; s < 20; ++s) {
      if (s == 5) {
        ASSERT_TRUE(e->add({12, prompt(17, 3), 30, sampled}));
      }
      if (s == 12) e->release(11);
      auto r = e->step();
      ASSERT_TRUE(r) << r.error().to_string();
      EXPECT_EQ(r->tokens.size(), e->active_sequences());
      if (s == 5) {
        EXPECT_EQ(r->prefill_tokens, 17);
      }
      for (const auto& t : r->tokens) {
        if (t.id != 10) continue;
        batched.tokens.push_back(t.token);
        batched.logprobs.push_back(t.logprob);
      }
    }
    EXPECT_EQ(batched, alone) << "temperature " << params.temperature;
  }
}

TEST(CpuEngine, ReleaseFreesBlocksForReuse) {
  EngineOptions o;
  o.kv_blocks = 4;
  o.block_tokens = 16;
  o.threads = 1;
  auto e = make(o);
  ASSERT_NE(e, nullptr);
  const SequenceSpec spec{1, prompt(40, 5), 24, {}};  // exactly 4 blocks
  ASSERT_TRUE(e->add(spec));
  EXPECT_EQ(e->kv_usage().blocks_used, 4);
  std::vector<int32_t> first;
  for (int s = 0; s < 5; ++s) first.push_back(e->step()->tokens.at(0).token);
  EXPECT_FALSE(e->fits_now(1, 1));
  e->release(1);
  EXPECT_EQ(e->kv_usage().blocks_used, 0);
  // The same blocks, now holding stale K/V, give the same tokens again.
  ASSERT_TRUE(e->add({2, spec.prompt, 24, {}}));
  std::vector<int32_t> second;
  for (int s = 0; s < 5; ++s) second.push_back(e->step()->tokens.at(0).token);
  EXPECT_EQ(first, second);
}

TEST(CpuEngine, DecodingPastTheContextIsAnErrorNotACrash) {
  EngineOptions o;
  o.max_context = 20;
  o.threads = 1;
  auto e = make(o);
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->add({1, prompt(15, 1), 5, {}}));
  // Prefill writes positions 0..14, then decodes write 15..19.
  for (int s = 0; s < 6; ++s) ASSERT_TRUE(e->step()) << "step " << s;
  auto r = e->step();  // would write position 20
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kResourceExhausted);
  e->release(1);
  EXPECT_EQ(e->kv_usage().blocks_used, 0);
}

TEST(CpuEngine, ThreadCountDoesNotChangeResults) {
  const SequenceSpec spec{1, prompt(70, 9), 8, {}};
  EXPECT_EQ(run_alone(spec, 8, 1), run_alone(spec, 8, 3));
}

TEST(CpuEngine, TopLogprobsAreReported) {
  EngineOptions o;
  o.threads = 1;
  auto e = make(o);
  SamplingParams p;
  p.top_logprobs = 5;
  ASSERT_TRUE(e->add({1, prompt(5, 1), 3, p}));
  auto r = e->step();
  ASSERT_TRUE(r);
  const auto& t = r->tokens.at(0);
  ASSERT_EQ(t.top.size(), 5u);
  EXPECT_EQ(t.top[0].token, t.token);  // greedy
  EXPECT_FLOAT_EQ(t.top[0].logprob, t.logprob);
  for (size_t i = 1; i < t.top.size(); ++i) EXPECT_LE(t.top[i].logprob, t.top[i - 1].logprob);
  EXPECT_LE(t.logprob, 0.0f);
}

TEST(CpuEngine, WeightsThatDoNotMatchTheConfigAreRejected) {
  auto w = small_weights();
  w.layers[1].down_proj.q.resize(10);
  auto e = CpuEngine::create({}, std::move(w));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Errc::kCorruptData);
  EXPECT_NE(e.error().message.find("model.layers.1.mlp.down_proj"), std::string::npos)
      << e.error().message;

  auto w2 = small_weights();
  w2.config.num_kv_heads = 3;
  EXPECT_FALSE(CpuEngine::create({}, std::move(w2)));
  auto w3 = small_weights();
  w3.embed_tokens.bf16.clear();
  EXPECT_FALSE(CpuEngine::create({}, std::move(w3)));
}

TEST(CpuEngine, BadOptionsAreRejected) {
  EngineOptions o;
  o.max_batch = 0;
  EXPECT_FALSE(CpuEngine::create(o, small_weights()));
  o = {};
  o.block_tokens = -4;
  EXPECT_FALSE(CpuEngine::create(o, small_weights()));
}

TEST(Factory, PicksTheCpuEngineAndReportsMissingCuda) {
  EngineOptions o;
  o.backend = Backend::kCpu;
  o.threads = 1;
  auto cpu = create_engine(o, small_weights());
  ASSERT_TRUE(cpu) << cpu.error().to_string();
  EXPECT_EQ((*cpu)->info().backend, "cpu");
  EXPECT_EQ((*cpu)->info().vocab_size, 300);
  EXPECT_EQ((*cpu)->info().eos_token_ids, std::vector<int32_t>{2});

  o.backend = Backend::kAuto;
  auto any = create_engine(o, small_weights());
  ASSERT_TRUE(any);
  EXPECT_EQ((*any)->info().backend, cuda_available() ? "cuda" : "cpu");
  if (!cuda_available()) {
    // Without a device (or without CUDA in the build) asking for cuda is a
    // clear error, never a silent fall back to the CPU.
    o.backend = Backend::kCuda;
    auto cuda = create_engine(o, small_weights());
    ASSERT_FALSE(cuda);
    EXPECT_EQ(cuda.error().code, Errc::kUnsupported);
    const auto& why = cuda.error().message;
    EXPECT_TRUE(why.find("built without CUDA") != std::string::npos ||
                why.find("no CUDA device") != std::string::npos)
        << why;
  }
  EXPECT_FALSE(parse_backend("gpu"));
  EXPECT_EQ(*parse_backend("cuda"), Backend::kCuda);
}

TEST(Factory, PipelineNamesRoundTrip) {
  for (Pipeline p : {Pipeline::kNaive, Pipeline::kPinned, Pipeline::kAsync, Pipeline::kGraphs})
    EXPECT_EQ(*parse_pipeline(pipeline_name(p)), p);
  auto bad = parse_pipeline("fast");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("naive, pinned, async or graphs"), std::string::npos);
}

TEST(Factory, GpuMemoryIsRefusedByTheCpuEngine) {
  EngineOptions o;
  o.backend = Backend::kCpu;
  o.gpu_memory_bytes = uint64_t{8} << 30;
  auto e = create_engine(o, small_weights());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Errc::kInvalidArgument);
  EXPECT_NE(e.error().message.find("--gpu-memory"), std::string::npos);
}

}  // namespace
}  // namespace ringserve::engine
