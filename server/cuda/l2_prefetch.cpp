#include "cuda/l2_prefetch.h"

#include <algorithm>
#include <utility>

#include "cuda_check.h"

namespace ringserve::cuda {

Expected<L2Prefetch> L2Prefetch::create(const DeviceModel& model, size_t budget_bytes,
                                        bool next_qkv) {
  L2Prefetch p;
  p.model_ = &model;
  p.budget_ = budget_bytes;
  p.next_qkv_ = next_qkv;
  if (budget_bytes == 0 && !next_qkv) return p;
  CUDA_CHECK(cudaStreamCreateWithFlags(&p.side_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&p.fork_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&p.join_, cudaEventDisableTiming));
  return p;
}

L2Prefetch::~L2Prefetch() {
  destroy();
}

L2Prefetch::L2Prefetch(L2Prefetch&& o) noexcept {
  *this = std::move(o);
}

L2Prefetch& L2Prefetch::operator=(L2Prefetch&& o) noexcept {
  if (this != &o) {
    destroy();
    model_ = std::exchange(o.model_, nullptr);
    budget_ = std::exchange(o.budget_, 0);
    next_qkv_ = std::exchange(o.next_qkv_, false);
    side_ = std::exchange(o.side_, nullptr);
    fork_ = std::exchange(o.fork_, nullptr);
    join_ = std::exchange(o.join_, nullptr);
    pending_ = std::exchange(o.pending_, false);
  }
  return *this;
}

void L2Prefetch::destroy() {
  if (side_) {
    cudaStreamSynchronize(side_);
    cudaStreamDestroy(side_);
  }
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
  side_ = nullptr;
  fork_ = join_ = nullptr;
}

Status L2Prefetch::launch(const kernels::PrefetchArgs& args, cudaStream_t compute) {
  if (args.count == 0) return ok();
  CUDA_CHECK(cudaEventRecord(fork_, compute));
  CUDA_CHECK(cudaStreamWaitEvent(side_, fork_, 0));
  RS_TRY_STATUS(kernels::prefetch_l2(args, side_));
  pending_ = true;
  return ok();
}

Status L2Prefetch::after_qkv(int layer, cudaStream_t compute) {
  if (!enabled() || layer >= model_->device_layers()) return ok();
  const DeviceLayer& l = model_->layers()[layer];
  kernels::PrefetchArgs args;
  size_t left = budget_;
  for (const DeviceLinear* m : {&l.o, &l.gate_up}) {
    const size_t n = std::min(left, static_cast<size_t>(m->rows) * m->cols);
    if (n == 0) break;
    args.ranges[args.count++] = {m->q, n};
    left -= n;
  }
  return launch(args, compute);
}

Status L2Prefetch::after_gate_up(int layer, cudaStream_t compute) {
  if (!enabled() || !next_qkv_ || layer + 1 >= model_->device_layers()) return ok();
  const DeviceLinear& qkv = model_->layers()[layer + 1].qkv;
  kernels::PrefetchArgs args;
  args.ranges[args.count++] = {qkv.q, static_cast<size_t>(qkv.rows) * qkv.cols};
  return launch(args, compute);
}

Status L2Prefetch::join(cudaStream_t compute) {
  if (!pending_) return ok();
  CUDA_CHECK(cudaEventRecord(join_, side_));
  CUDA_CHECK(cudaStreamWaitEvent(compute, join_, 0));
  pending_ = false;
  return ok();
}

}  // namespace ringserve::cuda
