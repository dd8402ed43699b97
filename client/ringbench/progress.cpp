#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace ringbench {

Progress::Progress(std::string label, int total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled && isatty(STDERR_FILENO) == 1) {
  if (!enabled_) return;
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      draw();
      cv_.wait_for(lock, std::chrono::milliseconds(200));
    }
  });
}

Progress::~Progress() {
  if (!enabled_) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  draw();
  std::fputc('\n', stderr);
}

void Progress::draw() {
  constexpr int kWidth = 30;
  const int done = done_.load(std::memory_order_relaxed);
  const int filled = total_ > 0 ? done * kWidth / total_ : kWidth;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r%s [%s] %d/%d requests %.1f s", label_.c_str(), bar.c_str(), done, total_,
               elapsed);
  std::fflush(stderr);
}

}  // namespace ringbench
