// Counters and recent latency distributions behind Dispatcher::stats().
// Written by the engine thread, read by any transport thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "scheduler/request.h"

namespace ringserve::serve {

class StatsRecorder {
 public:
  StatsRecorder(int max_batch, size_t latency_window, std::string engine_name);

  void on_submitted();
  void on_admitted(int prompt_tokens);
  void on_step(size_t sequences, std::chrono::microseconds duration, int generated_tokens);
  void on_ttft(std::chrono::microseconds ttft);
  void on_itl(std::chrono::microseconds itl);
  // The gauges: set whenever a request enters or leaves the queue or the
  // running batch, not only on a step (a cancel frees KV without one).
  void set_gauges(uint32_t queued, uint32_t running, const engine::KvUsage& kv);

  StatsSnapshot snapshot() const;

 private:
  void push_sample(std::deque<std::chrono::microseconds>& window, std::chrono::microseconds v);

  mutable std::mutex mutex_;
  size_t latency_window_;
  StatsSnapshot s_;
  std::chrono::microseconds step_time_total_{0};
  std::deque<std::chrono::microseconds> ttft_;
  std::deque<std::chrono::microseconds> itl_;
};

// Nearest-rank percentile (q in [0, 1]) of an unsorted sample; 0 when empty.
std::chrono::microseconds percentile(std::deque<std::chrono::microseconds> samples, double q);

}  // namespace ringserve::serve
