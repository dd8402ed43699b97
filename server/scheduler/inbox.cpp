#include "scheduler/inbox.h"

namespace ringserve::serve {

void Inbox::push(Submission submission) {
  {
    std::lock_guard lock(mutex_);
    contents_.submissions.push_back(std::move(submission));
  }
  cv_.notify_one();
}

void Inbox::cancel(uint64_t request_id) {
  {
    std::lock_guard lock(mutex_);
    contents_.cancels.push_back(request_id);
  }
  cv_.notify_one();
}

void Inbox::cancel_all() {
  {
    std::lock_guard lock(mutex_);
    contents_.cancel_all = true;
  }
  cv_.notify_one();
}

void Inbox::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_one();
}

Inbox::Contents Inbox::take() {
  std::lock_guard lock(mutex_);
  Contents out = std::move(contents_);
  contents_ = Contents{};
  return out;
}

size_t Inbox::pending_submissions() const {
  std::lock_guard lock(mutex_);
  return contents_.submissions.size();
}

bool Inbox::stop_requested() const {
  std::lock_guard lock(mutex_);
  return stop_;
}

bool Inbox::has_work_locked() const {
  return stop_ || contents_.cancel_all || !contents_.submissions.empty() ||
         !contents_.cancels.empty();
}

void Inbox::wait(std::optional<std::chrono::steady_clock::duration> timeout) {
  std::unique_lock lock(mutex_);
  if (!timeout) {
    cv_.wait(lock, [this] { return has_work_locked(); });
  } else if (timeout->count() > 0) {
    cv_.wait_for(lock, *timeout, [this] { return has_work_locked(); });
  }
}

}  // namespace ringserve::serve
