// The Qwen2 forward pass on the CPU over INT8 weights with fp32
// activations. Rows of several sequences (whole prompts and single decode
// tokens alike) go through the layers together, so each weight matrix is
// streamed once per step for all of them. Logits come from the unquantized
// head when the weights carry one (lm_head_bf16, or embed_tokens when tied),
// else from the INT8 lm_head.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/rope.h"
#include "engine/thread_pool.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::engine::cpu {

// One token of one sequence in a forward pass.
struct TokenRow {
  std::span<const int32_t> blocks;  // the sequence's KV block table
  int32_t token = 0;
  int pos = 0;          // its position: K/V are written there, attention sees 0..pos
  bool logits = false;  // whether this row's logits are wanted
};

class CpuModel {
 public:
  // Checks every tensor's shape against the config (kCorruptData naming the
  // tensor) so the forward pass can index without further checks.
  static Expected<CpuModel> create(model::ModelWeights weights, int max_positions,
                                   ThreadPool& pool);

  const model::ModelConfig& config() const { return weights_.config; }
  const model::ModelWeights& weights() const { return weights_; }
  int max_positions() const { return rope_.max_positions(); }

  // Runs `rows` in order. Rows of one sequence must come in increasing
  // position with every earlier position already in `kv` or earlier in
  // `rows`; callers guarantee tokens < vocab, pos < max_positions() and
  // blocks covering pos. Writes the wanted rows' logits, in row order, to
  // `logits` ([wanted, vocab], resized).
  void forward(std::span<const TokenRow> rows, KvCache& kv, std::vector<float>& logits);

  // Logits at every position of one sequence ([tokens, vocab]): the test
  // hook behind the per-position golden checks.
  Expected<std::vector<float>> forward_all_logits(std::span<const int32_t> tokens);

 private:
  CpuModel(model::ModelWeights weights, int max_positions, ThreadPool& pool);

  // At most this many rows go through the layers at once: bounds the
  // activation workspace for long prompts (later chunks read the KV that
  // earlier ones wrote).
  static constexpr int kMaxChunkRows = 256;

  void forward_chunk(std::span<const TokenRow> rows, KvCache& kv, float* logits);
  void attention(std::span<const TokenRow> rows, const KvCache& kv, int layer);

  model::ModelWeights weights_;
  RopeTable rope_;
  ThreadPool* pool_;
  // Workspace, [rows, width] each; grown on demand, reused across steps.
  std::vector<float> x_, xn_, q_, k_, v_, attn_, gate_, up_, out_;
};

}  // namespace ringserve::engine::cpu
