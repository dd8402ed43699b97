// Every buffer a forward pass touches besides the weights and the KV cache,
// allocated once at start-up and sized for the engine's limits, plus the
// per-step metadata that travels from host to device (pinned, mapped).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/device_memory.h"
#include "model/config.h"
#include "ringserve/common/expected.h"
#include "sampling.h"

namespace ringserve::cuda {

struct Limits {
  int max_batch = 0;           // sequences per decode step
  int max_context = 0;         // tokens per sequence
  int max_prefill_tokens = 0;  // prompt tokens per prefill pass
  int block_tokens = 0;
  int max_blocks_per_seq = 0;
  int split_tokens = 0;  // decode attention split length
  int max_splits = 0;
  int target_splits = 0;   // fused decode attention (0: split + combine kernels)
  int heads_per_pass = 0;  // prefill attention heads per score buffer
};

// Per-step metadata, one struct of arrays in one pinned buffer so a single
// copy (a node of the decode graph) moves all of it.
struct StepMeta {
  int32_t* tokens;                  // [rows]
  int32_t* positions;               // [rows]
  int32_t* slots;                   // [rows]: KV slot of the token being written
  int32_t* context_lens;            // [max_batch]: decode keys to attend
  int32_t* block_tables;            // [max_batch][max_blocks_per_seq]
  int32_t* last_rows;               // [max_batch]: prefill row of each sequence's last token
  kernels::SamplingSlot* sampling;  // [max_batch]
};

struct Workspace {
  // host_kind: pinned and mapped (every pipeline but naive) or pageable.
  static Expected<Workspace> allocate(const model::ModelConfig& c, const Limits& limits,
                                      bool dequant_buffer,
                                      HostMemory host_kind = HostMemory::kPinnedMapped);
  // What allocate() takes from the GPU, for the memory budget.
  static size_t device_bytes(const model::ModelConfig& c, const Limits& limits,
                             bool dequant_buffer);

  Limits limits;
  DeviceBuffer device;
  HostBuffer meta_host;      // filled by the host each step
  DeviceBuffer meta_device;  // its device copy
  HostBuffer results;        // SampleResult[max_batch], read by the host
  // Where the sampler writes: results' mapped address, or results_device
  // when results is pageable (then copied back after each pass).
  kernels::SampleResult* sample_out = nullptr;
  DeviceBuffer results_device;
  size_t meta_bytes = 0;
  StepMeta host_meta{};  // views into meta_host
  StepMeta dev_meta{};   // the same views into meta_device

  // Decode (rows = batch) and prefill (rows = tokens) share these.
  float* resid = nullptr;       // [rows][hidden]
  __nv_bfloat16* xn = nullptr;  // [max(rows, 2*max_batch)][hidden]
  float* qkv_f32 = nullptr;     // [max_batch][qkv]: decode GEMV output
  float* gemm_out = nullptr;    // [max_prefill][max(qkv, 2*inter, hidden)]
  __nv_bfloat16* q = nullptr;   // [rows][q_dim]
  __nv_bfloat16* k = nullptr;   // [max_prefill][kv_dim]: this prompt's keys
  __nv_bfloat16* v = nullptr;
  __nv_bfloat16* attn = nullptr;                       // [rows][q_dim]
  __nv_bfloat16* act = nullptr;                        // [rows][inter]
  float* logits = nullptr;                             // [2*max_batch][vocab]: hi and lo halves
  float* sample_scratch = nullptr;                     // [max_batch][vocab]
  kernels::SamplingRowScratch* sample_rows = nullptr;  // [max_batch]
  float* partial_o = nullptr;                          // decode attention splits
  float* partial_ml = nullptr;
  int* split_counters = nullptr;   // [max_batch][kv_heads], zeroed once; fused attention
  float* rope_inv_freq = nullptr;  // [head_dim / 2], model::rope_inv_freq()
  float* scores = nullptr;         // prefill attention
  __nv_bfloat16* probs = nullptr;
  void** pointers = nullptr;         // prefill attention GEMM pointer tables
  __nv_bfloat16* dequant = nullptr;  // one linear in bf16 when not resident
  void* cublas_workspace = nullptr;
  size_t cublas_workspace_bytes = 0;
};

}  // namespace ringserve::cuda
