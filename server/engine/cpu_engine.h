// The CPU reference engine: the Engine interface over CpuModel, a paged KV
// cache and the reference sampler. Every step runs all active sequences in
// one forward pass: whole prompts of newly added sequences and one token of
// each running one.
#pragma once

#include <memory>
#include <vector>

#include "engine/cpu_model.h"
#include "engine/engine.h"
#include "engine/engine_options.h"
#include "engine/kv_cache.h"
#include "engine/sampler.h"
#include "engine/thread_pool.h"
#include "model/weights.h"

namespace ringserve::engine {

class CpuEngine final : public Engine {
 public:
  // Errors: kInvalidArgument (options), kCorruptData (weights that do not
  // match their config), kResourceExhausted (KV capacity below one block).
  static Expected<std::unique_ptr<CpuEngine>> create(const EngineOptions& options,
                                                     model::ModelWeights weights);

  const EngineInfo& info() const override { return info_; }
  bool fits_ever(int prompt_tokens, int max_new_tokens) const override;
  bool fits_now(int prompt_tokens, int max_new_tokens) const override;
  Status add(const SequenceSpec& spec) override;
  Expected<StepResult> step() override;
  void release(SeqId id) override;
  size_t active_sequences() const override { return sequences_.size(); }
  KvUsage kv_usage() const override;

  // The model, for tests that need logits at every position.
  cpu::CpuModel& model() { return *model_; }
  int threads() const { return pool_->size(); }

 private:
  struct Sequence {
    SequenceSpec spec;
    std::vector<int32_t> blocks;  // KV block table
    int cached = 0;               // positions already in the KV cache
    int32_t next_token = -1;      // sampled last step, fed in this step
    uint64_t generated = 0;       // tokens sampled so far (the RNG counter)
  };

  CpuEngine() = default;
  int64_t blocks_needed(int prompt_tokens, int max_new_tokens) const;

  EngineOptions options_;
  EngineInfo info_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<cpu::CpuModel> model_;
  std::unique_ptr<cpu::KvCache> kv_;
  std::vector<Sequence> sequences_;  // in admission order: batches are deterministic
  Sampler sampler_;
  std::vector<cpu::TokenRow> rows_;
  std::vector<float> logits_;
};

}  // namespace ringserve::engine
