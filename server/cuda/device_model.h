// The model's weights in the layouts the kernels want: q/k/v fused into one
// [q_dim + 2 kv_dim, hidden] matrix, gate/up fused and interleaved in 16-row
// groups (kernels::packed_gate_row) so one GEMV pass applies SiLU(gate) * up.
// Optionally also an exact bf16 copy of every linear weight (integer values;
// scales stay separate) for the prefill GEMMs.
//
// Where each part lives follows a WeightPlacement (offload/plan.h decides
// it): a prefix of the layers, the output head and every norm on the GPU;
// the remaining layers' linear weights, and optionally the token embedding,
// in host memory. Each layer's linear weights form one "blob" of the same
// layout for every layer, so a streamed layer can be copied with a single
// memcpy into any ring slot and its DeviceLinears re-pointed at that slot.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "cuda/device_memory.h"
#include "gemv_w8a16.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

// A decode GEMV's launch shapes (gemv_tuning.h picks them): the fastest
// shape at batch 1 is not the fastest at batch 4 (other loads per thread,
// other register pressure), so batch 1 and wider batches each get their own.
struct GemvShapes {
  kernels::GemvConfig single;  // batch 1
  kernels::GemvConfig multi;   // batch 2 and up (timed at the engine's widest decode batch)
  const kernels::GemvConfig& for_batch(int batch) const { return batch <= 1 ? single : multi; }
};

struct DeviceLinear {
  const int8_t* q = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;            // null when the layer has none
  const __nv_bfloat16* q_bf16 = nullptr;  // resident prefill copy, or null
  int rows = 0;
  int cols = 0;
  // How `q` is laid out: tiled for the decode GEMVs wherever the shape
  // allows (WeightPlacement::gemv_layout); the prefill reads the bf16 copy
  // or dequantizes through kernels::int8_to_bf16, which undoes the tiles.
  kernels::WeightLayout layout = kernels::WeightLayout::kRowMajor;
  GemvShapes gemv;  // decode launch shapes
};

// The launch arguments of a decode GEMV over `l`: out = epi(l · x) for
// `batch` rows of x. The launch shape (l.gemv.for_batch) is the caller's to pass.
inline kernels::GemvArgs gemv_args(const DeviceLinear& l, const __nv_bfloat16* x, int batch,
                                   void* out, kernels::GemvEpilogue epi, bool pdl = false) {
  kernels::GemvArgs a;
  a.pdl = pdl;
  a.w = l.q;
  a.layout = l.layout;
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

struct WeightPlacement {
  int device_layers = INT_MAX;  // layers [0, device_layers) on the GPU, the rest on the host
  bool embedding_on_host = false;
  // Host-side layers in pageable memory (the naive pipeline) instead of
  // pinned, mapped memory. The embedding, when on the host, is always pinned:
  // its rows are gathered by a kernel.
  HostMemory host_layers = HostMemory::kPinnedMapped;
  // The int8 weights' layout wherever they live, applied by finish():
  // 16x64 tiles for every linear whose shape allows (weight_layout.h: the
  // decode GEMVs stream them faster), or row-major as loaded.
  kernels::WeightLayout gemv_layout = kernels::WeightLayout::kTiled16x64;
};

// Which fused linears carry a bias (Qwen2: qkv only). The blob layout
// reserves room for a bias only where some layer has one.
struct LinearBiases {
  bool qkv = false, o = false, gate_up = false, down = false, lm_head = false;
};

// Byte offsets of one fused linear inside a blob (or the device storage).
struct LinearSlots {
  size_t q = 0, scale = 0, bias = SIZE_MAX, q_bf16 = SIZE_MAX;
};

class DeviceModel {
 public:
  // Lays the model out per `placement`, allocates it (nothing filled yet).
  // resident_bf16: also keep the bf16 prefill copy of every linear weight
  // (only when every layer is on the GPU). head_bf16: room for an
  // unquantized [vocab, hidden] output head.
  static Expected<DeviceModel> allocate(const model::ModelConfig& config,
                                        const LinearBiases& biases, bool resident_bf16,
                                        bool head_bf16, const WeightPlacement& placement);

  // allocate() + fill from host-side INT8 weights (model::load_model's).
  static Expected<DeviceModel> upload(const model::ModelWeights& w, bool resident_bf16,
                                      const WeightPlacement& placement, cudaStream_t stream,
                                      UploadStats* stats);

  const model::ModelConfig& config() const { return config_; }
  const std::vector<DeviceLayer>& layers() const { return layers_; }
  const __nv_bfloat16* embedding() const { return embed_; }
  const float* final_norm() const { return final_norm_; }
  const DeviceLinear& lm_head() const { return lm_head_; }
  // An unquantized bf16 output head ([vocab, hidden]) when the checkpoint
  // provides one (or ties it to a GPU-resident embedding); null otherwise.
  const __nv_bfloat16* lm_head_bf16() const { return lm_head_bf16_; }
  bool resident_bf16() const { return resident_bf16_; }
  std::vector<DeviceLayer>& mutable_layers() { return layers_; }
  DeviceLinear& mutable_lm_head() { return lm_head_; }
  size_t device_bytes() const { return storage_.bytes(); }
  size_t host_bytes() const { return host_layers_.bytes() + host_embed_.bytes(); }

  int device_layers() const { return device_layers_; }
  bool on_host(int layer) const { return layer >= device_layers_; }
  // One layer's linear weights as a blob: its size, and where a host-side
  // layer's blob is (host address; device address when pinned, else null).
  size_t blob_bytes() const { return blob_bytes_; }
  const char* host_blob(int layer) const;
  const void* host_blob_device(int layer) const;
  // Points layer `layer`'s linears at a blob at `device` (a ring slot, or
  // the mapped host blob for zero-copy reads).
  void bind_layer(int layer, const void* device);

  // Where each part goes, for fillers (upload above; the checkpoint loader):
  // the blob layout, the address of a layer's blob (device storage or host),
  // and the other tensors' device (or host) addresses.
  struct Targets {
    LinearSlots qkv, o, gate_up, down;  // offsets inside a blob
  };
  const Targets& blob_layout() const { return blob_; }
  char* layer_blob_target(int layer) const;  // host pointer for host layers
  float* input_norm_target(int layer) const;
  float* post_norm_target(int layer) const;
  char* embedding_target() const;  // device pointer, or host pointer when on the host
  bool embedding_on_host() const { return host_embed_.bytes() > 0; }
  float* final_norm_target() const;
  char* lm_head_target() const;  // base of the head's slots (lm_head_slots())
  const LinearSlots& lm_head_slots() const { return head_; }
  __nv_bfloat16* lm_head_bf16_target() const;  // null without head_bf16

  // After filling (row-major, as the fillers write): the bf16 prefill copies
  // from the int8 weights and the tied head's alias, when they apply, then
  // the int8 weights into their layouts (DeviceLinear::layout; GPU work on
  // `stream`, host-side blobs on the CPU).
  Status finish(bool tied_head, cudaStream_t stream);

 private:
  Status tile_weights(cudaStream_t stream);

  model::ModelConfig config_;
  LinearBiases biases_;
  DeviceBuffer storage_;
  HostBuffer host_layers_;  // blobs of layers [device_layers_, num_layers)
  HostBuffer host_embed_;   // the embedding, when on the host
  std::vector<DeviceLayer> layers_;
  std::vector<size_t> layer_blob_off_;  // device storage offset (device layers)
  std::vector<size_t> in_norm_off_, post_norm_off_;
  std::vector<Targets> bf16_;  // per layer: device offsets of its bf16 copies (resident_bf16)
  Targets blob_;
  size_t blob_bytes_ = 0;
  int device_layers_ = 0;
  size_t embed_off_ = SIZE_MAX, final_norm_off_ = 0, head_off_ = 0, head_bf16_off_ = SIZE_MAX;
  LinearSlots head_;
  const __nv_bfloat16* embed_ = nullptr;
  const float* final_norm_ = nullptr;
  DeviceLinear lm_head_;
  const __nv_bfloat16* lm_head_bf16_ = nullptr;
  bool resident_bf16_ = false;
};

// Bytes of the bf16 prefill copy (what resident_bf16 costs).
size_t bf16_copy_bytes(const model::ModelConfig& c);

}  // namespace ringserve::cuda
