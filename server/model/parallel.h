// Splitting row loops over a few threads. Loading is the only place the
// model code runs in parallel, so plain jthreads per call are enough: the
// per-call spawn cost is microseconds against milliseconds of work.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace ringserve::model {

inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// Calls fn(begin, end) on disjoint chunks covering [0, n). fn must not throw.
template <class Fn>
void parallel_for(size_t n, int threads, size_t min_chunk, Fn&& fn) {
  size_t workers = static_cast<size_t>(resolve_threads(threads));
  if (min_chunk == 0) min_chunk = 1;
  workers = std::min(workers, (n + min_chunk - 1) / min_chunk);
  if (workers <= 1) {
    if (n > 0) fn(size_t{0}, n);
    return;
  }
  std::vector<std::jthread> pool;
  pool.reserve(workers - 1);
  size_t chunk = (n + workers - 1) / workers;
  for (size_t w = 1; w < workers; ++w) {
    size_t begin = w * chunk;
    size_t end = std::min(n, begin + chunk);
    if (begin >= end) break;
    pool.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  fn(size_t{0}, std::min(n, chunk));
}

}  // namespace ringserve::model
