// An eventfd used as a doorbell between the two ends of a ring.
#pragma once

#include <chrono>

#include "ringserve/common/expected.h"
#include "ringserve/protocol/unique_fd.h"

namespace ringserve::protocol {

// Non-blocking, close-on-exec eventfd. ring() makes fd() readable; drain()
// resets it. Waiting is the caller's: poll() the fd, or hand it to an event
// loop (e.g. boost::asio::posix::stream_descriptor::async_wait(wait_read)).
class Doorbell {
 public:
  static Expected<Doorbell> create();
  // Takes ownership of a received fd; checks it is an eventfd.
  static Expected<Doorbell> adopt(UniqueFd fd);

  Doorbell() = default;
  int fd() const noexcept { return fd_.get(); }
  bool valid() const noexcept { return fd_.valid(); }

  // Never blocks; a counter already at its maximum is still "rung".
  void ring() const noexcept;
  // Resets the counter; returns whether it was rung.
  bool drain() const noexcept;
  // Blocks until rung or the timeout passes (negative: forever); does not
  // drain. Returns false on timeout. EINTR restarts the wait.
  Expected<bool> wait(std::chrono::nanoseconds timeout) const;

 private:
  explicit Doorbell(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace ringserve::protocol
