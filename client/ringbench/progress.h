// A one-line progress bar on stderr, redrawn a few times a second while a
// run is going; silent when stderr is not a terminal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace ringbench {

class Progress {
 public:
  Progress(std::string label, int total, bool enabled);
  ~Progress();  // draws the final state and ends the line
  void add(int done = 1) { done_.fetch_add(done, std::memory_order_relaxed); }

 private:
  void draw();

  std::string label_;
  int total_;
  bool enabled_;
  std::atomic<int> done_{0};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ringbench
