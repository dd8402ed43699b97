// The hand-off from transport threads to the engine thread: submissions and
// cancellations go in under a mutex; the engine thread takes everything at
// once at the top of each loop iteration, or sleeps here until something
// arrives or its next deadline passes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "scheduler/request.h"

namespace ringserve::serve {

class Inbox {
 public:
  struct Submission {
    Request request;
    std::shared_ptr<RequestSink> sink;
  };
  struct Contents {
    std::vector<Submission> submissions;  // in arrival order
    std::vector<uint64_t> cancels;        // applied after the submissions
    bool cancel_all = false;
  };

  void push(Submission submission);
  void cancel(uint64_t request_id);
  void cancel_all();
  void request_stop();

  Contents take();
  size_t pending_submissions() const;
  bool stop_requested() const;

  // Returns when there is something to take, a stop was requested, or the
  // timeout (if any) expired.
  void wait(std::optional<std::chrono::steady_clock::duration> timeout);

 private:
  bool has_work_locked() const;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Contents contents_;
  bool stop_ = false;
};

}  // namespace ringserve::serve
