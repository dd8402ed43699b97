// A fixed set of worker threads for data-parallel loops (matmul rows,
// attention heads). The calling thread works too, so threads == 1 runs
// everything inline. Only one parallel_for runs at a time: the engine thread
// is the only caller.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ringserve::engine {

class ThreadPool {
 public:
  // threads <= 0: std::thread::hardware_concurrency().
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n), each at least
  // `grain` long (except the last), and returns when all have finished.
  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker_loop(std::stop_token stop, int index);
  void run_chunks();

  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  int busy_ = 0;
  // The current job, valid while busy_ > 0.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 0;
  int64_t next_ = 0;  // guarded by mutex_
  std::vector<std::jthread> workers_;
};

}  // namespace ringserve::engine
