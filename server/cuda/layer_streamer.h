// Brings host-resident layers (DeviceModel::on_host) to the kernels during a
// forward pass, in one of three ways:
//
//   kRing     a copy stream moves each streamed layer into a ring of N
//             layer-sized device buffers ahead of its compute: layer i goes
//             to slot (i - first) mod N once the layer that last used the
//             slot has finished, with events between the streams. The first
//             N copies start with the pass, under the resident prefix's
//             compute. Every call is stream-ordered, so a decode pass that
//             uses it can be captured in a CUDA graph (the copy stream forks
//             from and joins the compute stream inside the capture).
//   kSync     copy-sync-compute (the naive and pinned pipelines): before a
//             streamed layer the host waits for the GPU, copies the layer
//             with a synchronous cudaMemcpy and then launches its kernels.
//   kZeroCopy nothing moves: the layers are bound to their mapped pinned
//             host memory and the kernels read across the link.
//
// The forward pass calls begin_pass, then before_layer / after_layer around
// every layer, then end_pass; for resident layers the calls do nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/device_memory.h"
#include "cuda/device_model.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

class LayerStreamer {
 public:
  enum class Mode { kRing, kSync, kZeroCopy };

  LayerStreamer() = default;
  // Allocates the ring (kRing, kSync) and binds the model's host layers to
  // ring slots or to their mapped memory. ring_slots: 2..4 (kSync uses 1).
  static Expected<LayerStreamer> create(DeviceModel& model, Mode mode, int ring_slots);
  ~LayerStreamer();
  LayerStreamer(LayerStreamer&& o) noexcept;
  LayerStreamer& operator=(LayerStreamer&& o) noexcept;
  LayerStreamer(const LayerStreamer&) = delete;
  LayerStreamer& operator=(const LayerStreamer&) = delete;

  Status begin_pass(cudaStream_t compute);
  Status before_layer(int layer, cudaStream_t compute);
  Status after_layer(int layer, cudaStream_t compute);
  Status end_pass(cudaStream_t compute);

  Mode mode() const { return mode_; }
  int slots() const { return static_cast<int>(slot_ptrs_.size()); }
  size_t ring_bytes() const { return ring_.bytes(); }
  // Layer bytes crossing the link per pass (copied, or read in place).
  uint64_t bytes_per_pass() const;

  // Device bytes the ring takes for this model, mode and slot count.
  static size_t ring_bytes_for(const DeviceModel& model, Mode mode, int ring_slots);

 private:
  bool streamed(int layer) const { return model_ && model_->on_host(layer); }
  int slot_of(int layer) const { return (layer - first_) % slots(); }
  Status enqueue_copy(int layer);
  void destroy();

  DeviceModel* model_ = nullptr;
  Mode mode_ = Mode::kRing;
  int first_ = 0;  // first streamed layer
  int last_ = 0;   // one past the last
  DeviceBuffer ring_;
  std::vector<char*> slot_ptrs_;
  cudaStream_t copy_ = nullptr;
  static constexpr size_t kFork = 0, kJoin = 1;
  Events fork_join_;      // the copy stream forks from and joins the compute stream
  Events copied_, done_;  // per streamed layer
};

}  // namespace ringserve::cuda
