// How an engine is built: which backend, how many sequences and tokens it
// must hold, how big its KV cache is, and how many CPU threads it may use.
// Shared by every backend (the CPU reference here, CUDA in server/cuda/).
#pragma once

#include <cstdint>
#include <string_view>

#include "ringserve/common/expected.h"

namespace ringserve::engine {

enum class Backend { kCpu, kCuda, kAuto };

// "cpu", "cuda", "auto" (kInvalidArgument otherwise).
Expected<Backend> parse_backend(std::string_view name);
const char* backend_name(Backend backend) noexcept;

struct EngineOptions {
  Backend backend = Backend::kAuto;
  int max_batch = 4;    // most sequences one step may run
  int max_context = 0;  // tokens per sequence (prompt + generated); 0: the model's maximum
  // KV capacity: kv_blocks when > 0, else as many blocks as kv_budget_bytes
  // holds when > 0, else enough for max_batch sequences of max_context tokens.
  int64_t kv_blocks = 0;
  int64_t kv_budget_bytes = 0;
  int block_tokens = 16;  // tokens per KV block
  int threads = 0;        // CPU worker threads; 0: hardware concurrency
  int device = 0;         // CUDA device ordinal
};

}  // namespace ringserve::engine
