#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "io/read_backend.h"

namespace ringserve::io {
namespace {

// Reads until `length` bytes or end of file; -errno on failure.
int64_t pread_fully(const ReadRequest& r) {
  size_t done = 0;
  while (done < r.length) {
    const ssize_t n =
        ::pread(r.fd, r.dest + done, r.length - done, static_cast<off_t>(r.offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
}

class PreadBackend final : public ReadBackend {
 public:
  explicit PreadBackend(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
  }
  ~PreadBackend() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    for (auto& t : workers_) t.join();
  }

  size_t max_in_flight() const override { return 64; }

  Status submit(const ReadRequest& request) override {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(request);
    }
    work_ready_.notify_one();
    return ok();
  }

  Expected<ReadCompletion> wait() override {
    std::unique_lock lock(mutex_);
    done_ready_.wait(lock, [this] { return !done_.empty(); });
    ReadCompletion c = done_.front();
    done_.pop_front();
    return c;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      const ReadRequest r = queue_.front();
      queue_.pop_front();
      lock.unlock();
      const ReadCompletion c{r.tag, pread_fully(r)};
      lock.lock();
      done_.push_back(c);
      done_ready_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_ready_, done_ready_;
  std::deque<ReadRequest> queue_;
  std::deque<ReadCompletion> done_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<ReadBackend> make_pread_backend(int threads) {
  return std::make_unique<PreadBackend>(std::clamp(threads, 1, 16));
}

}  // namespace ringserve::io
