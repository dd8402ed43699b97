// How an engine is built: which backend, how many sequences and tokens it
// must hold, how big its KV cache is, and how many CPU threads it may use.
// Shared by every backend (the CPU reference here, CUDA in server/cuda/).
#pragma once

#include <cstdint>
#include <string_view>

#include "offload/strategy.h"
#include "ringserve/common/expected.h"

namespace ringserve::engine {

enum class Backend { kCpu, kCuda, kAuto };

// How the CUDA engine moves data between host and GPU (--pipeline). Each
// level adds one lever of the article's ablation to the one before, so the
// same binary can measure what each is worth:
//   naive:  pageable host memory, synchronous copies, copy-sync-compute,
//           no CUDA graphs (what a first port does);
//   pinned: the same, from pinned host memory;
//   async:  asynchronous copies on a copy stream, prefetching streamed
//           layers into a ring of device buffers while earlier layers compute;
//           one synchronisation per step;
//   graphs: async, with each decode step replayed from a CUDA graph (default).
enum class Pipeline { kNaive, kPinned, kAsync, kGraphs };

// "naive", "pinned", "async", "graphs" (kInvalidArgument otherwise).
// Inline: the CUDA library uses them and sits below rs_engine.
inline Expected<Pipeline> parse_pipeline(std::string_view name) {
  if (name == "naive") return Pipeline::kNaive;
  if (name == "pinned") return Pipeline::kPinned;
  if (name == "async") return Pipeline::kAsync;
  if (name == "graphs") return Pipeline::kGraphs;
  return make_error(Errc::kInvalidArgument,
                    "pipeline '{}': expected naive, pinned, async or graphs", name);
}

inline const char* pipeline_name(Pipeline pipeline) noexcept {
  switch (pipeline) {
    case Pipeline::kNaive:
      return "naive";
    case Pipeline::kPinned:
      return "pinned";
    case Pipeline::kAsync:
      return "async";
    case Pipeline::kGraphs:
      return "graphs";
  }
  return "?";
}

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

  // CUDA only. gpu_memory_bytes > 0 caps what the engine allocates on the
  // GPU (weights, KV pool, workspace, ring buffers; not the CUDA context):
  // the layers that do not fit stay in pinned host memory and reach the
  // kernels as `offload` says (offload/plan.h has the placement policy).
  uint64_t gpu_memory_bytes = 0;
  offload::OffloadMode offload = offload::OffloadMode::kAuto;
  int ring_slots = 2;  // stream: layer buffers in the device ring (2 or 3)
  Pipeline pipeline = Pipeline::kGraphs;
};

}  // namespace ringserve::engine
