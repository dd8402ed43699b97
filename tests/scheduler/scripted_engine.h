// A deterministic engine for scheduler tests: it emits scripted tokens,
// accounts KV in blocks like the real engines, advances a virtual clock by a
// fixed cost per step, and records which sequences ran in each step.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <vector>

#include "engine/engine.h"
#include "scheduler/time_source.h"

namespace ringserve::serve::testing {

class VirtualClock final : public TimeSource {
 public:
  Clock::time_point now() const override {
    return Clock::time_point(std::chrono::nanoseconds(ns_.load(std::memory_order_acquire)));
  }
  void advance(std::chrono::nanoseconds d) { ns_.fetch_add(d.count(), std::memory_order_acq_rel); }
  Clock::time_point start() const { return Clock::time_point(std::chrono::nanoseconds(kStart)); }

 private:
  static constexpr int64_t kStart = 1'000'000'000'000;  // away from the epoch: no sign tricks
  std::atomic<int64_t> ns_{kStart};
};

struct ScriptedEngineOptions {
  int vocab_size = 1000;
  int max_context = 512;
  int max_batch = 8;
  int64_t kv_blocks = 1024;
  int block_tokens = 16;
  std::vector<int32_t> eos = {2};
  std::chrono::microseconds step_cost{5000};  // virtual time one step takes
};

class ScriptedEngine final : public engine::Engine {
 public:
  ScriptedEngine(ScriptedEngineOptions options, VirtualClock* clock);

  // The tokens sequence `id` will produce, in order; after the script runs
  // out (or without one) it produces 100 + its step count, never an eos.
  void script(engine::SeqId id, std::vector<int32_t> tokens) { scripts_[id] = std::move(tokens); }
  // The next step() fails.
  void fail_next_step() { fail_next_ = true; }

  const std::vector<std::set<engine::SeqId>>& steps() const { return steps_; }
  const std::vector<engine::SeqId>& added_order() const { return added_; }
  const std::vector<engine::SeqId>& released() const { return released_; }

  const engine::EngineInfo& info() const override { return info_; }
  bool fits_ever(int prompt_tokens, int max_new_tokens) const override;
  bool fits_now(int prompt_tokens, int max_new_tokens) const override;
  Status add(const engine::SequenceSpec& spec) override;
  Expected<engine::StepResult> step() override;
  void release(engine::SeqId id) override;
  size_t active_sequences() const override { return seqs_.size(); }
  engine::KvUsage kv_usage() const override;

 private:
  struct Seq {
    engine::SequenceSpec spec;
    int64_t blocks = 0;
    int produced = 0;
  };
  int64_t blocks_for(int prompt_tokens, int max_new_tokens) const;

  ScriptedEngineOptions options_;
  VirtualClock* clock_;
  engine::EngineInfo info_;
  std::map<engine::SeqId, Seq> seqs_;
  std::map<engine::SeqId, std::vector<int32_t>> scripts_;
  int64_t blocks_used_ = 0;
  bool fail_next_ = false;
  std::vector<std::set<engine::SeqId>> steps_;
  std::vector<engine::SeqId> added_;
  std::vector<engine::SeqId> released_;
};

}  // namespace ringserve::serve::testing
