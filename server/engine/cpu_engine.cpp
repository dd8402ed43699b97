#include "engine/cpu_engine.h"

#include <algorithm>
#include <limits>
#include <span>

#include "engine/cpu_kernels.h"
#include "util/log.h"

namespace ringserve::engine {
namespace {

// Without an explicit KV size the pool holds max_batch full-length
// sequences, but never more than this: a 7B model's 128k context would
// otherwise ask for tens of GB.
constexpr int64_t kDefaultKvBudgetBytes = int64_t{1} << 30;

}  // namespace

Expected<std::unique_ptr<CpuEngine>> CpuEngine::create(const EngineOptions& options,
                                                       model::ModelWeights weights) {
  const model::ModelConfig& config = weights.config;
  if (options.max_batch <= 0 || options.block_tokens <= 0 || options.max_context < 0 ||
      options.kv_blocks < 0 || options.kv_budget_bytes < 0 || options.threads < 0) {
    return make_error(
        Errc::kInvalidArgument,
        "engine options: max_batch {}, block_tokens {}, max_context {}, kv_blocks {}, "
        "kv_budget_bytes {}, threads {}",
        options.max_batch, options.block_tokens, options.max_context, options.kv_blocks,
        options.kv_budget_bytes, options.threads);
  }
  std::unique_ptr<CpuEngine> engine(new CpuEngine());
  engine->options_ = options;
  int max_context = options.max_context;
  if (max_context == 0) max_context = config.max_position_embeddings;
  if (max_context <= 0) {
    return make_error(Errc::kInvalidArgument,
                      "no context length: the model has no max_position_embeddings; set "
                      "max_context");
  }
  engine->options_.max_context = max_context;

  const int64_t block_bytes = cpu::KvCache::bytes_per_block(
      std::max(config.num_layers, 1), std::max(config.kv_dim(), 1), options.block_tokens);
  int64_t blocks = options.kv_blocks;
  if (blocks == 0 && options.kv_budget_bytes > 0) blocks = options.kv_budget_bytes / block_bytes;
  if (blocks == 0) {
    blocks =
        std::min(cpu::KvCache::blocks_for(static_cast<int64_t>(options.max_batch) * max_context,
                                          options.block_tokens),
                 kDefaultKvBudgetBytes / block_bytes);
  }
  if (blocks <= 0 || blocks > std::numeric_limits<int32_t>::max()) {
    return make_error(Errc::kResourceExhausted,
                      "KV cache of {} blocks ({} bytes each) cannot hold a sequence", blocks,
                      block_bytes);
  }

  engine->pool_ = std::make_unique<ThreadPool>(options.threads);
  auto model = cpu::CpuModel::create(std::move(weights), max_context, *engine->pool_);
  if (!model) return with_context(std::move(model).error(), "cpu engine");
  engine->model_ = std::make_unique<cpu::CpuModel>(std::move(model).value());
  const auto& c = engine->model_->config();
  engine->kv_ =
      std::make_unique<cpu::KvCache>(c.num_layers, c.kv_dim(), options.block_tokens, blocks);

  EngineInfo& info = engine->info_;
  info.backend = "cpu";
  info.model_name = c.name;
  info.vocab_size = c.vocab_size;
  info.max_context = max_context;
  info.max_batch = options.max_batch;
  info.eos_token_ids = c.eos_token_ids;
  log::get("engine")->info(
      "cpu engine: model {} ({} layers, hidden {}), {} threads, kernels {}, KV {} blocks x {} "
      "tokens ({} MiB), max_batch {}, max_context {}",
      c.name, c.num_layers, c.hidden_size, engine->pool_->size(), cpu::kernel_isa(), blocks,
      options.block_tokens, blocks * block_bytes >> 20, options.max_batch, max_context);
  return engine;
}

int64_t CpuEngine::blocks_needed(int prompt_tokens, int max_new_tokens) const {
  // The last sampled token is never fed back, but reserving it keeps the
  // arithmetic obvious and covers max_new_tokens == 0.
  const int64_t tokens = static_cast<int64_t>(prompt_tokens) + std::max(max_new_tokens, 1);
  return cpu::KvCache::blocks_for(tokens, options_.block_tokens);
}

bool CpuEngine::fits_ever(int prompt_tokens, int max_new_tokens) const {
  if (prompt_tokens <= 0 || max_new_tokens < 0) return false;
  if (static_cast<int64_t>(prompt_tokens) + max_new_tokens > options_.max_context) return false;
  return blocks_needed(prompt_tokens, max_new_tokens) <= kv_->blocks_total();
}

bool CpuEngine::fits_now(int prompt_tokens, int max_new_tokens) const {
  return fits_ever(prompt_tokens, max_new_tokens) &&
         sequences_.size() < static_cast<size_t>(options_.max_batch) &&
         blocks_needed(prompt_tokens, max_new_tokens) <= kv_->blocks_free();
}

Status CpuEngine::add(const SequenceSpec& spec) {
  if (spec.prompt.empty()) {
    return make_error(Errc::kInvalidArgument, "seq={}: empty prompt", spec.id);
  }
  if (spec.max_new_tokens < 0) {
    return make_error(Errc::kInvalidArgument, "seq={}: max_new_tokens {} is negative", spec.id,
                      spec.max_new_tokens);
  }
  for (int32_t token : spec.prompt) {
    if (token < 0 || token >= info_.vocab_size) {
      return make_error(Errc::kInvalidArgument, "seq={}: token {} outside the vocabulary of {}",
                        spec.id, token, info_.vocab_size);
    }
  }
  if (spec.sampling.top_logprobs < 0 || spec.sampling.top_logprobs > kMaxTopLogprobs) {
    return make_error(Errc::kInvalidArgument, "seq={}: top_logprobs {} outside 0..{}", spec.id,
                      spec.sampling.top_logprobs, kMaxTopLogprobs);
  }
  for (const auto& s : sequences_) {
    if (s.spec.id == spec.id) {
      return make_error(Errc::kInvalidArgument, "seq={}: already active", spec.id);
    }
  }
  if (spec.prompt.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return make_error(Errc::kTooLarge, "seq={}: prompt of {} tokens", spec.id, spec.prompt.size());
  }
  const int prompt = static_cast<int>(spec.prompt.size());
  if (!fits_ever(prompt, spec.max_new_tokens)) {
    return make_error(Errc::kTooLarge,
                      "seq={}: {} prompt + {} new tokens exceed the context of {} or the KV "
                      "cache of {} tokens",
                      spec.id, prompt, spec.max_new_tokens, options_.max_context,
                      kv_->blocks_total() * options_.block_tokens);
  }
  if (sequences_.size() >= static_cast<size_t>(options_.max_batch)) {
    return make_error(Errc::kResourceExhausted, "seq={}: {} sequences already running", spec.id,
                      sequences_.size());
  }
  Sequence seq;
  seq.spec = spec;
  if (auto st = kv_->allocate(blocks_needed(prompt, spec.max_new_tokens), seq.blocks); !st) {
    return with_context(std::move(st).error(), fmt::format("seq={}", spec.id));
  }
  log::get("engine")->debug("seq={}: added, {} prompt tokens, {} KV blocks", spec.id, prompt,
                            seq.blocks.size());
  sequences_.push_back(std::move(seq));
  return ok();
}

Expected<StepResult> CpuEngine::step() {
  StepResult result;
  if (sequences_.empty()) return result;

  // Grow any sequence that decodes past its reservation (the scheduler
  // releases at max_new_tokens, so this is the unusual case) before touching
  // anything, so a failure leaves every sequence as it was.
  for (auto& s : sequences_) {
    const int64_t positions = s.cached == 0 ? static_cast<int64_t>(s.spec.prompt.size())
                                            : static_cast<int64_t>(s.cached) + 1;
    if (positions > options_.max_context) {
      return make_error(Errc::kResourceExhausted, "seq={}: reached the context limit of {}",
                        s.spec.id, options_.max_context);
    }
    const int64_t need = cpu::KvCache::blocks_for(positions, options_.block_tokens) -
                         static_cast<int64_t>(s.blocks.size());
    if (need > 0) {
      if (auto st = kv_->allocate(need, s.blocks); !st) {
        return with_context(std::move(st).error(),
                            fmt::format("seq={}: past its reservation", s.spec.id));
      }
    }
  }

  rows_.clear();
  for (const auto& s : sequences_) {
    if (s.cached == 0) {
      const int n = static_cast<int>(s.spec.prompt.size());
      for (int i = 0; i < n; ++i) {
        rows_.push_back({s.blocks, s.spec.prompt[i], i, i == n - 1});
      }
      result.prefill_tokens += n;
    } else {
      rows_.push_back({s.blocks, s.next_token, s.cached, true});
      ++result.decode_tokens;
    }
  }
  model_->forward(rows_, *kv_, logits_);

  const auto vocab = static_cast<size_t>(info_.vocab_size);
  result.tokens.reserve(sequences_.size());
  for (size_t i = 0; i < sequences_.size(); ++i) {
    Sequence& s = sequences_[i];
    const bool prefill = s.cached == 0;
    const std::span<const float> logits(logits_.data() + i * vocab, vocab);
    SampleOutput out = sampler_.sample(logits, s.spec.sampling, s.generated);
    s.cached += prefill ? static_cast<int>(s.spec.prompt.size()) : 1;
    s.next_token = out.token;
    ++s.generated;
    result.tokens.push_back(
        SampledToken{s.spec.id, out.token, out.logprob, std::move(out.top), prefill});
  }
  return result;
}

void CpuEngine::release(SeqId id) {
  auto it = std::find_if(sequences_.begin(), sequences_.end(),
                         [id](const Sequence& s) { return s.spec.id == id; });
  if (it == sequences_.end()) return;
  kv_->release(it->blocks);
  log::get("engine")->debug("seq={}: released after {} tokens", id, it->generated);
  sequences_.erase(it);
}

KvUsage CpuEngine::kv_usage() const {
  return KvUsage{kv_->blocks_total(), kv_->blocks_used(), options_.block_tokens};
}

}  // namespace ringserve::engine
