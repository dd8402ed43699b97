#include "scheduler/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ringserve::serve {

std::chrono::microseconds percentile(std::deque<std::chrono::microseconds> samples, double q) {
  if (samples.empty()) return std::chrono::microseconds{0};
  std::vector<std::chrono::microseconds> v(samples.begin(), samples.end());
  const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size()));
  const size_t index = rank < 1.0 ? 0 : static_cast<size_t>(rank) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(index), v.end());
  return v[index];
}

StatsRecorder::StatsRecorder(int max_batch, size_t latency_window, std::string engine_name)
    : latency_window_(latency_window) {
  s_.batch_size_histogram.assign(static_cast<size_t>(max_batch) + 1, 0);
  s_.engine = std::move(engine_name);
}

void StatsRecorder::on_submitted() {
  std::lock_guard lock(mutex_);
  ++s_.requests_total;
}

void StatsRecorder::on_admitted(int prompt_tokens) {
  std::lock_guard lock(mutex_);
  s_.prompt_tokens_total += static_cast<uint64_t>(prompt_tokens);
}

void StatsRecorder::on_step(size_t sequences, std::chrono::microseconds duration,
                            int generated_tokens) {
  std::lock_guard lock(mutex_);
  // An engine may run more sequences than the scheduler's max batch only if
  // it is misconfigured; count such steps in the last bucket, not out of range.
  const size_t bucket = std::min(sequences, s_.batch_size_histogram.size() - 1);
  ++s_.batch_size_histogram[bucket];
  ++s_.steps_total;
  step_time_total_ += duration;
  s_.mean_step = step_time_total_ / static_cast<int64_t>(s_.steps_total);
  s_.completion_tokens_total += static_cast<uint64_t>(generated_tokens);
}

void StatsRecorder::push_sample(std::deque<std::chrono::microseconds>& window,
                                std::chrono::microseconds v) {
  window.push_back(v);
  while (window.size() > latency_window_) window.pop_front();
}

void StatsRecorder::on_ttft(std::chrono::microseconds ttft) {
  std::lock_guard lock(mutex_);
  push_sample(ttft_, ttft);
  s_.ttft_histogram.observe(std::chrono::duration<double>(ttft).count());
}

void StatsRecorder::on_itl(std::chrono::microseconds itl) {
  std::lock_guard lock(mutex_);
  push_sample(itl_, itl);
  s_.itl_histogram.observe(std::chrono::duration<double>(itl).count());
}

void StatsRecorder::set_gauges(uint32_t queued, uint32_t running, const engine::KvUsage& kv) {
  std::lock_guard lock(mutex_);
  s_.queue_depth = queued;
  s_.requests_active = running;
  s_.kv = kv;
}

StatsSnapshot StatsRecorder::snapshot() const {
  std::deque<std::chrono::microseconds> ttft, itl;
  StatsSnapshot out;
  {
    std::lock_guard lock(mutex_);
    out = s_;
    ttft = ttft_;
    itl = itl_;
  }
  out.ttft_p50 = percentile(ttft, 0.50);
  out.ttft_p99 = percentile(ttft, 0.99);
  out.itl_p50 = percentile(itl, 0.50);
  out.itl_p99 = percentile(itl, 0.99);
  return out;
}

}  // namespace ringserve::serve
