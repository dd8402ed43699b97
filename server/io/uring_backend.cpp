#include <liburing.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "io/read_backend.h"

namespace ringserve::io {
namespace {

class UringBackend final : public ReadBackend {
 public:
  explicit UringBackend(unsigned depth) : depth_(depth) {}
  ~UringBackend() override {
    // The reader drains every read before it returns; this only guards a
    // bug, by not freeing ring memory the kernel could still write.
    if (!initialized_) return;
    while (!pending_.empty() && wait()) {
    }
    io_uring_queue_exit(&ring_);
  }

  Status init() {
    const int rc = io_uring_queue_init(depth_, &ring_, 0);
    if (rc < 0)
      return make_error(Errc::kUnsupported, "io_uring_queue_init: {}", std::strerror(-rc));
    initialized_ = true;
    return ok();
  }

  size_t max_in_flight() const override { return depth_; }

  Status submit(const ReadRequest& request) override {
    pending_[request.tag] = Pending{request, 0};
    return queue_read(request.tag);
  }

  Expected<ReadCompletion> wait() override {
    for (;;) {
      if (unsubmitted_ > 0) {
        const int rc = io_uring_submit(&ring_);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
          return make_error(Errc::kIoError, "io_uring_submit: {}", std::strerror(-rc));
        if (rc > 0) unsubmitted_ -= static_cast<unsigned>(rc);
      }
      io_uring_cqe* cqe = nullptr;
      const int rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) return make_error(Errc::kIoError, "io_uring_wait_cqe: {}", std::strerror(-rc));
      const uint64_t tag = io_uring_cqe_get_data64(cqe);
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);

      auto it = pending_.find(tag);
      if (it == pending_.end()) return make_error(Errc::kInternal, "io_uring: unknown tag {}", tag);
      Pending& p = it->second;
      if (res == -EAGAIN || res == -EINTR) {
        RS_TRY_STATUS(queue_read(tag));
        continue;
      }
      if (res > 0 && p.done + static_cast<size_t>(res) < p.request.length) {
        // A short read that is not end of file: ask for the rest.
        p.done += static_cast<size_t>(res);
        RS_TRY_STATUS(queue_read(tag));
        continue;
      }
      const int64_t result = res < 0 ? res : static_cast<int64_t>(p.done + res);
      pending_.erase(it);
      return ReadCompletion{tag, result};
    }
  }

 private:
  struct Pending {
    ReadRequest request;
    size_t done = 0;
  };

  Status queue_read(uint64_t tag) {
    const Pending& p = pending_.at(tag);
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      // The submission queue is full of prepared reads: hand them over.
      const int rc = io_uring_submit(&ring_);
      if (rc > 0) unsubmitted_ -= static_cast<unsigned>(rc);
      sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) return make_error(Errc::kInternal, "io_uring: submission queue full");
    }
    const ReadRequest& r = p.request;
    io_uring_prep_read(sqe, r.fd, r.dest + p.done, static_cast<unsigned>(r.length - p.done),
                       r.offset + p.done);
    io_uring_sqe_set_data64(sqe, tag);
    ++unsubmitted_;
    return ok();
  }

  unsigned depth_;
  bool initialized_ = false;
  io_uring ring_{};
  unsigned unsubmitted_ = 0;
  std::unordered_map<uint64_t, Pending> pending_;
};

}  // namespace

Expected<std::unique_ptr<ReadBackend>> make_uring_backend(unsigned depth) {
  auto backend = std::make_unique<UringBackend>(depth);
  RS_TRY_STATUS(backend->init());
  return std::unique_ptr<ReadBackend>(std::move(backend));
}

}  // namespace ringserve::io
