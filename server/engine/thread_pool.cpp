#include "engine/thread_pool.h"

#include <algorithm>

namespace ringserve::engine {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) {
    workers_.emplace_back([this, i](std::stop_token stop) { worker_loop(stop, i); });
  }
}

ThreadPool::~ThreadPool() {
  for (auto& w : workers_) w.request_stop();
  { std::lock_guard lock(mutex_); }
  wake_.notify_all();
  workers_.clear();  // joins
}

void ThreadPool::run_chunks() {
  for (;;) {
    int64_t begin;
    {
      std::lock_guard lock(mutex_);
      if (next_ >= n_) return;
      begin = next_;
      next_ += chunk_;
    }
    (*fn_)(begin, std::min(n_, begin + chunk_));
  }
}

void ThreadPool::worker_loop(std::stop_token stop, int /*index*/) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (!wake_.wait(lock, stop, [&] { return generation_ != seen; })) return;
      seen = generation_;
    }
    run_chunks();
    {
      std::lock_guard lock(mutex_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = static_cast<int64_t>(size()) * 4;
  const int64_t chunk = std::max(grain, (n + max_chunks - 1) / max_chunks);
  if (workers_.empty() || chunk >= n) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk;
    next_ = 0;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  run_chunks();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
}

}  // namespace ringserve::engine
