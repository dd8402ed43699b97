// The engine interface: every backend (the CPU reference, CUDA) runs
// sequences through add / step / release. One thread owns an engine; none of
// its methods is thread-safe.
//
// Life of a sequence:
//   add(seq)      reserves KV for prompt + max_new_tokens; nothing runs yet
//   step()        runs one batched forward pass over all active sequences:
//                 prefill for sequences added since the last step (their
//                 first token comes out of it), one decode token for the
//                 others; the sampled token is fed back automatically on the
//                 next step()
//   release(id)   frees the sequence and its KV (finished, cancelled, gone)
// Stop conditions (EOS, stop strings, length) are the scheduler's business:
// the engine samples until it is told to release.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::engine {

using SeqId = uint64_t;

struct SamplingParams {
  float temperature = 0.0f;  // <= 0: greedy (argmax, lowest id on ties)
  float top_p = 1.0f;        // nucleus mass; >= 1 disables
  int top_k = 0;             // 0 disables
  uint64_t seed = 0;         // per-sequence RNG stream; same seed, same tokens
  int top_logprobs = 0;      // n best alternatives to report per token (0..20)
};

struct SequenceSpec {
  SeqId id = 0;
  std::vector<int32_t> prompt;  // token ids, non-empty
  int max_new_tokens = 0;       // KV is reserved for prompt + this many tokens
  SamplingParams sampling;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct SampledToken {
  SeqId id = 0;
  int32_t token = 0;
  float logprob = 0.0f;           // log-softmax of the sampled token (always filled)
  std::vector<TokenLogprob> top;  // best first, size = sampling.top_logprobs
  bool from_prefill = false;      // the sequence's first generated token
};

struct StepResult {
  std::vector<SampledToken> tokens;  // one per sequence that ran this step
  int prefill_tokens = 0;            // prompt tokens processed in this step
  int decode_tokens = 0;             // sequences that decoded one token
};

struct KvUsage {
  int64_t blocks_total = 0;
  int64_t blocks_used = 0;
  int block_tokens = 0;  // tokens per block
};

struct EngineInfo {
  std::string backend;  // "cpu", "cuda"
  std::string model_name;
  int vocab_size = 0;
  int max_context = 0;  // longest prompt + generation a sequence may have
  int max_batch = 0;    // most sequences a step may run
  std::vector<int32_t> eos_token_ids;
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual const EngineInfo& info() const = 0;

  // Whether a sequence of this size could ever be admitted (empty engine) and
  // whether it can be admitted now (free KV and a free batch slot).
  virtual bool fits_ever(int prompt_tokens, int max_new_tokens) const = 0;
  virtual bool fits_now(int prompt_tokens, int max_new_tokens) const = 0;

  // Errors: kInvalidArgument (empty prompt, ids out of vocab, duplicate id),
  // kResourceExhausted (does not fit now), kTooLarge (can never fit).
  virtual Status add(const SequenceSpec& spec) = 0;

  // One forward pass over every active sequence. An empty engine returns an
  // empty result.
  virtual Expected<StepResult> step() = 0;

  // Frees the sequence; unknown ids are ignored.
  virtual void release(SeqId id) = 0;

  virtual size_t active_sequences() const = 0;
  virtual KvUsage kv_usage() const = 0;
};

}  // namespace ringserve::engine
