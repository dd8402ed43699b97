// The model's weights resident on the GPU, in the layouts the kernels want:
// q/k/v fused into one [q_dim + 2 kv_dim, hidden] matrix, gate/up fused and
// interleaved in 16-row groups (kernels::packed_gate_row) so one GEMV pass
// applies SiLU(gate) * up. Optionally also an exact bf16 copy of every linear
// weight (integer values; scales stay separate) for the prefill GEMMs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/device_memory.h"
#include "gemv_w8a16.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

struct DeviceLinear {
  const int8_t* q = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;            // null when the layer has none
  const __nv_bfloat16* q_bf16 = nullptr;  // resident prefill copy, or null
  int rows = 0;
  int cols = 0;
  kernels::GemvConfig gemv;  // decode launch shape (gemv_tuning.h picks it)
};

// The launch arguments of a decode GEMV over `l`: out = epi(l · x) for
// `batch` rows of x. The launch shape (l.gemv) is the caller's to pass.
inline kernels::GemvArgs gemv_args(const DeviceLinear& l, const __nv_bfloat16* x, int batch,
                                   void* out, kernels::GemvEpilogue epi, bool pdl = false) {
  kernels::GemvArgs a;
  a.pdl = pdl;
  a.w = l.q;
  a.scale = l.scale;
  a.bias = l.bias;
  a.rows = l.rows;
  a.cols = l.cols;
  a.x = x;
  a.batch = batch;
  a.out = out;
  a.epilogue = epi;
  return a;
}

struct DeviceLayer {
  const float* input_norm = nullptr;
  const float* post_attention_norm = nullptr;
  DeviceLinear qkv, o, gate_up, down;
};

struct UploadStats {
  size_t bytes = 0;
  double seconds = 0.0;
};

class DeviceModel {
 public:
  // resident_bf16: also keep the bf16 prefill copy of every linear weight.
  static Expected<DeviceModel> upload(const model::ModelWeights& w, bool resident_bf16,
                                      cudaStream_t stream, UploadStats* stats);

  const model::ModelConfig& config() const { return config_; }
  const std::vector<DeviceLayer>& layers() const { return layers_; }
  const __nv_bfloat16* embedding() const { return embed_; }
  const float* final_norm() const { return final_norm_; }
  const DeviceLinear& lm_head() const { return lm_head_; }
  // An unquantized bf16 output head ([vocab, hidden]) when the checkpoint
  // provides one (or ties it to the embedding); null otherwise.
  const __nv_bfloat16* lm_head_bf16() const { return lm_head_bf16_; }
  bool resident_bf16() const { return resident_bf16_; }
  std::vector<DeviceLayer>& mutable_layers() { return layers_; }
  DeviceLinear& mutable_lm_head() { return lm_head_; }
  size_t device_bytes() const { return storage_.bytes(); }

 private:
  model::ModelConfig config_;
  DeviceBuffer storage_;
  std::vector<DeviceLayer> layers_;
  const __nv_bfloat16* embed_ = nullptr;
  const float* final_norm_ = nullptr;
  DeviceLinear lm_head_;
  const __nv_bfloat16* lm_head_bf16_ = nullptr;
  bool resident_bf16_ = false;
};

// Bytes of the bf16 prefill copy (what resident_bf16 costs).
size_t bf16_copy_bytes(const model::ModelConfig& c);

}  // namespace ringserve::cuda
