// Warms L2 with the weights the decode step reads next, on a side stream
// that forks from the compute stream and joins it at the end of the step (a
// fork and a join the CUDA graph captures as edges):
//   - after a layer's qkv GEMV, while rope and attention leave DRAM nearly
//     idle: that layer's o_proj, then the start of its gate/up, up to a byte
//     budget;
//   - optionally, after its gate/up GEMV, while the down GEMV leaves a third
//     of the bandwidth unused: the next layer's qkv.
// The short GEMVs (o_proj, qkv: 13-16 MB, a DRAM latency and a tail each)
// then read their weights from L2.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/device_model.h"
#include "prefetch.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

class L2Prefetch {
 public:
  L2Prefetch() = default;
  // budget_bytes: per layer, in the attention window; next_qkv: the next
  // layer's qkv during the down GEMV. Neither: every call is a no-op.
  static Expected<L2Prefetch> create(const DeviceModel& model, size_t budget_bytes, bool next_qkv);
  ~L2Prefetch();
  L2Prefetch(L2Prefetch&& o) noexcept;
  L2Prefetch& operator=(L2Prefetch&& o) noexcept;
  L2Prefetch(const L2Prefetch&) = delete;
  L2Prefetch& operator=(const L2Prefetch&) = delete;

  bool enabled() const { return side_ != nullptr; }
  size_t budget() const { return budget_; }

  // Called after the layer's qkv and gate/up GEMVs are enqueued on
  // `compute`. Layers in host memory (small-VRAM mode) are skipped: their
  // bytes arrive through the streamer.
  Status after_qkv(int layer, cudaStream_t compute);
  Status after_gate_up(int layer, cudaStream_t compute);
  // Makes `compute` wait for every prefetch enqueued since the last join.
  Status join(cudaStream_t compute);

 private:
  void destroy();
  Status launch(const kernels::PrefetchArgs& args, cudaStream_t compute);

  const DeviceModel* model_ = nullptr;
  size_t budget_ = 0;
  bool next_qkv_ = false;
  cudaStream_t side_ = nullptr;
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
  bool pending_ = false;
};

}  // namespace ringserve::cuda
