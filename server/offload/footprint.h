// What each part of a model costs in memory, in the layouts the engines hold
// it (model/weights.h): linear weights INT8 with one fp32 scale per output
// row, biases and norms fp32, the token embedding bf16, the KV cache bf16.
#pragma once

#include <cstdint>

#include "model/config.h"
#include "ringserve/common/expected.h"

namespace ringserve::offload {

struct ModelFootprint {
  int num_layers = 0;
  uint64_t layer_bytes = 0;          // one decoder layer: int8 + scales + biases + norms
  uint64_t layer_int8_bytes = 0;     // of which the int8 weights
  uint64_t lm_head_bytes = 0;        // int8 [vocab, hidden] + scales
  uint64_t embedding_bytes = 0;      // bf16 [vocab, hidden]
  uint64_t embedding_row_bytes = 0;  // what one token's lookup reads
  uint64_t final_norm_bytes = 0;
  uint64_t kv_bytes_per_token = 0;    // K and V, all layers, bf16
  uint64_t largest_linear_elems = 0;  // rows * cols of the largest (fused) linear

  uint64_t all_layers_bytes() const { return layer_bytes * static_cast<uint64_t>(num_layers); }
  // Every weight read by one decode step when all is resident (no embedding:
  // only its rows are read).
  uint64_t step_weight_bytes() const { return all_layers_bytes() + lm_head_bytes; }
};

// Errors: kInvalidArgument when a size is not positive or heads do not
// divide (the planner is often the first to see a hand-written config).
Expected<ModelFootprint> compute_footprint(const model::ModelConfig& config);

// KV pool for `tokens` cached tokens (max_batch x max_context, say).
uint64_t kv_pool_bytes(const ModelFootprint& f, uint64_t tokens);

// The engine's limits that size its workspace.
struct EngineShape {
  int max_batch = 4;
  int max_context = 4096;
  int max_prefill_tokens = 512;
};

// An estimate of the CUDA engine's workspace (activations for the larger of
// a decode batch and a prefill pass, fp32 GEMM output, logits and sampling
// scratch, prefill attention scores, one bf16 dequantized copy of the
// largest linear for prefill GEMMs of non-resident weights, 32 MiB of cuBLAS
// workspace). The engine knows its exact figure once allocated; this is for
// planning before, and for tests.
uint64_t estimate_workspace_bytes(const model::ModelConfig& config, const EngineShape& shape);

}  // namespace ringserve::offload
