#include "cuda/layer_streamer.h"

#include <algorithm>
#include <utility>

#include "cuda_check.h"

namespace ringserve::cuda {

size_t LayerStreamer::ring_bytes_for(const DeviceModel& model, Mode mode, int ring_slots) {
  const int host_layers = model.config().num_layers - model.device_layers();
  if (host_layers <= 0 || mode == Mode::kZeroCopy) return 0;
  const int slots = mode == Mode::kSync ? 1 : std::min(ring_slots, host_layers);
  return static_cast<size_t>(slots) * model.blob_bytes();
}

Expected<LayerStreamer> LayerStreamer::create(DeviceModel& model, Mode mode, int ring_slots) {
  if (ring_slots < 2 || ring_slots > 4)
    return make_error(Errc::kInvalidArgument, "ring slots {}: expected 2 to 4", ring_slots);
  LayerStreamer s;
  s.model_ = &model;
  s.mode_ = mode;
  s.first_ = model.device_layers();
  s.last_ = model.config().num_layers;
  if (s.first_ >= s.last_) return s;  // everything resident: nothing to do
  if (mode == Mode::kZeroCopy) {
    for (int l = s.first_; l < s.last_; ++l) {
      const void* mapped = model.host_blob_device(l);
      if (!mapped)
        return make_error(Errc::kInvalidArgument,
                          "zero-copy needs the offloaded layers in pinned, mapped memory");
      model.bind_layer(l, mapped);
    }
    return s;
  }
  const size_t bytes = ring_bytes_for(model, mode, ring_slots);
  const int slots = static_cast<int>(bytes / model.blob_bytes());
  s.ring_ = RS_TRY(DeviceBuffer::allocate(bytes, "offload ring"));
  // Zeroed so that anything reading a slot before its first copy (the
  // start-up GEMV tuner) sees finite weights.
  CUDA_CHECK(cudaMemset(s.ring_.as(), 0, bytes));
  for (int i = 0; i < slots; ++i)
    s.slot_ptrs_.push_back(s.ring_.as<char>() + i * model.blob_bytes());
  for (int l = s.first_; l < s.last_; ++l) model.bind_layer(l, s.slot_ptrs_[s.slot_of(l)]);
  if (mode == Mode::kRing) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&s.copy_, cudaStreamNonBlocking));
    const size_t n = static_cast<size_t>(s.last_ - s.first_);
    s.fork_join_ = RS_TRY(Events::create(2));
    s.copied_ = RS_TRY(Events::create(n));
    s.done_ = RS_TRY(Events::create(n));
  }
  return s;
}

LayerStreamer::~LayerStreamer() {
  destroy();
}

void LayerStreamer::destroy() {
  fork_join_ = {};
  copied_ = {};
  done_ = {};
  if (copy_) cudaStreamDestroy(copy_);
  copy_ = nullptr;
}

LayerStreamer::LayerStreamer(LayerStreamer&& o) noexcept {
  *this = std::move(o);
}

LayerStreamer& LayerStreamer::operator=(LayerStreamer&& o) noexcept {
  if (this == &o) return *this;
  destroy();
  model_ = std::exchange(o.model_, nullptr);
  mode_ = o.mode_;
  first_ = o.first_;
  last_ = o.last_;
  ring_ = std::move(o.ring_);
  slot_ptrs_ = std::move(o.slot_ptrs_);
  copy_ = std::exchange(o.copy_, nullptr);
  fork_join_ = std::move(o.fork_join_);
  copied_ = std::move(o.copied_);
  done_ = std::move(o.done_);
  return *this;
}

uint64_t LayerStreamer::bytes_per_pass() const {
  if (!model_ || first_ >= last_) return 0;
  return static_cast<uint64_t>(last_ - first_) * model_->blob_bytes();
}

Status LayerStreamer::enqueue_copy(int layer) {
  const int i = layer - first_;
  // The slot's previous user (this pass) must be done with it; at the
  // start of a pass the fork orders the copy after the previous pass.
  if (layer - slots() >= first_) CUDA_CHECK(cudaStreamWaitEvent(copy_, done_[i - slots()], 0));
  CUDA_CHECK(cudaMemcpyAsync(slot_ptrs_[slot_of(layer)], model_->host_blob(layer),
                             model_->blob_bytes(), cudaMemcpyHostToDevice, copy_));
  CUDA_CHECK(cudaEventRecord(copied_[i], copy_));
  return ok();
}

Status LayerStreamer::begin_pass(cudaStream_t compute) {
  if (mode_ != Mode::kRing || first_ >= last_) return ok();
  CUDA_CHECK(cudaEventRecord(fork_join_[kFork], compute));
  CUDA_CHECK(cudaStreamWaitEvent(copy_, fork_join_[kFork], 0));
  for (int l = first_; l < std::min(last_, first_ + slots()); ++l) RS_TRY_STATUS(enqueue_copy(l));
  return ok();
}

Status LayerStreamer::before_layer(int layer, cudaStream_t compute) {
  if (!streamed(layer)) return ok();
  switch (mode_) {
    case Mode::kZeroCopy:
      return ok();
    case Mode::kRing:
      CUDA_CHECK(cudaStreamWaitEvent(compute, copied_[layer - first_], 0));
      return ok();
    case Mode::kSync:
      // Copy, sync, compute: the GPU idles during the copy and the link
      // idles during the compute, which is the point of this mode.
      CUDA_CHECK(cudaStreamSynchronize(compute));
      CUDA_CHECK(cudaMemcpy(slot_ptrs_[slot_of(layer)], model_->host_blob(layer),
                            model_->blob_bytes(), cudaMemcpyHostToDevice));
      return ok();
  }
  return ok();
}

Status LayerStreamer::after_layer(int layer, cudaStream_t compute) {
  if (mode_ != Mode::kRing || !streamed(layer)) return ok();
  CUDA_CHECK(cudaEventRecord(done_[layer - first_], compute));
  if (layer + slots() < last_) RS_TRY_STATUS(enqueue_copy(layer + slots()));
  return ok();
}

Status LayerStreamer::end_pass(cudaStream_t compute) {
  if (mode_ != Mode::kRing || first_ >= last_) return ok();
  // Joins the copy stream back (a capture must end with every forked
  // stream joined); all its copies were waited for by the layers anyway.
  CUDA_CHECK(cudaEventRecord(fork_join_[kJoin], copy_));
  CUDA_CHECK(cudaStreamWaitEvent(compute, fork_join_[kJoin], 0));
  return ok();
}

}  // namespace ringserve::cuda
