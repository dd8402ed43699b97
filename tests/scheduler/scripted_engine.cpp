#include "scripted_engine.h"

#include <cmath>

namespace ringserve::serve::testing {

ScriptedEngine::ScriptedEngine(ScriptedEngineOptions options, VirtualClock* clock)
    : options_(std::move(options)), clock_(clock) {
  info_.backend = "scripted";
  info_.model_name = "scripted";
  info_.vocab_size = options_.vocab_size;
  info_.max_context = options_.max_context;
  info_.max_batch = options_.max_batch;
  info_.eos_token_ids = options_.eos;
}

int64_t ScriptedEngine::blocks_for(int prompt_tokens, int max_new_tokens) const {
  const int64_t tokens = static_cast<int64_t>(prompt_tokens) + max_new_tokens;
  return (tokens + options_.block_tokens - 1) / options_.block_tokens;
}

bool ScriptedEngine::fits_ever(int prompt_tokens, int max_new_tokens) const {
  return blocks_for(prompt_tokens, max_new_tokens) <= options_.kv_blocks;
}

bool ScriptedEngine::fits_now(int prompt_tokens, int max_new_tokens) const {
  return seqs_.size() < static_cast<size_t>(options_.max_batch) &&
         blocks_used_ + blocks_for(prompt_tokens, max_new_tokens) <= options_.kv_blocks;
}

Status ScriptedEngine::add(const engine::SequenceSpec& spec) {
  if (spec.prompt.empty()) return make_error(Errc::kInvalidArgument, "empty prompt");
  if (seqs_.count(spec.id)) return make_error(Errc::kInvalidArgument, "duplicate id {}", spec.id);
  const int prompt = static_cast<int>(spec.prompt.size());
  if (!fits_ever(prompt, spec.max_new_tokens)) return make_error(Errc::kTooLarge, "never fits");
  if (!fits_now(prompt, spec.max_new_tokens)) {
    return make_error(Errc::kResourceExhausted, "does not fit now");
  }
  const int64_t blocks = blocks_for(prompt, spec.max_new_tokens);
  blocks_used_ += blocks;
  seqs_.emplace(spec.id, Seq{spec, blocks, 0});
  added_.push_back(spec.id);
  return ok();
}

Expected<engine::StepResult> ScriptedEngine::step() {
  engine::StepResult result;
  if (seqs_.empty()) return result;
  if (fail_next_) {
    fail_next_ = false;
    return make_error(Errc::kInternal, "scripted step failure");
  }
  std::set<engine::SeqId> ran;
  for (auto& [id, seq] : seqs_) {
    ran.insert(id);
    engine::SampledToken t;
    t.id = id;
    t.from_prefill = seq.produced == 0;
    auto script = scripts_.find(id);
    if (script != scripts_.end() && seq.produced < static_cast<int>(script->second.size())) {
      t.token = script->second[static_cast<size_t>(seq.produced)];
    } else {
      t.token = 100 + seq.produced;
    }
    t.logprob = -0.5f * static_cast<float>(seq.produced + 1);
    for (int k = 0; k < seq.spec.sampling.top_logprobs; ++k) {
      t.top.push_back(engine::TokenLogprob{t.token + k, t.logprob - static_cast<float>(k)});
    }
    if (t.from_prefill) {
      result.prefill_tokens += static_cast<int>(seq.spec.prompt.size());
    } else {
      ++result.decode_tokens;
    }
    ++seq.produced;
    result.tokens.push_back(std::move(t));
  }
  steps_.push_back(std::move(ran));
  if (clock_) clock_->advance(options_.step_cost);
  return result;
}

void ScriptedEngine::release(engine::SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  blocks_used_ -= it->second.blocks;
  seqs_.erase(it);
  released_.push_back(id);
}

engine::KvUsage ScriptedEngine::kv_usage() const {
  return engine::KvUsage{options_.kv_blocks, blocks_used_, options_.block_tokens};
}

}  // namespace ringserve::serve::testing
