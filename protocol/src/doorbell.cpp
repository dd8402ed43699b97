#include "ringserve/protocol/doorbell.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ringserve::protocol {
namespace {

bool is_eventfd(int fd) {
  // An eventfd's /proc link reads "anon_inode:[eventfd]".
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  char target[64] = {};
  ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  // Without /proc there is no way to tell; the fd is then only ever used with
  // non-blocking read/write/poll, which fail harmlessly on anything else.
  if (n < 0) return errno == ENOENT && ::access("/proc/self/fd", F_OK) != 0;
  return std::string_view(target, static_cast<size_t>(n)) == "anon_inode:[eventfd]";
}

}  // namespace

Expected<Doorbell> Doorbell::create() {
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return make_error(Errc::kIoError, "eventfd: {}", std::strerror(errno));
  return Doorbell(UniqueFd(fd));
}

Expected<Doorbell> Doorbell::adopt(UniqueFd fd) {
  if (!fd.valid()) return make_error(Errc::kInvalidArgument, "doorbell: no fd");
  if (!is_eventfd(fd.get())) {
    return make_error(Errc::kProtocolError, "doorbell: fd {} is not an eventfd", fd.get());
  }
  // The peer may have passed a blocking eventfd; drain() must never block.
  if (::fcntl(fd.get(), F_SETFL, O_NONBLOCK) != 0) {
    return make_error(Errc::kIoError, "doorbell: fcntl: {}", std::strerror(errno));
  }
  return Doorbell(std::move(fd));
}

void Doorbell::ring() const noexcept {
  const uint64_t one = 1;
  // EAGAIN means the counter is saturated: the fd is readable already.
  while (::write(fd_.get(), &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

bool Doorbell::drain() const noexcept {
  uint64_t value = 0;
  ssize_t n;
  do {
    n = ::read(fd_.get(), &value, sizeof(value));
  } while (n < 0 && errno == EINTR);
  return n == sizeof(value) && value != 0;
}

Expected<bool> Doorbell::wait(std::chrono::nanoseconds timeout) const {
  using namespace std::chrono;
  const bool forever = timeout.count() < 0;
  const auto deadline = steady_clock::now() + (forever ? nanoseconds(0) : timeout);
  for (;;) {
    int ms = -1;
    if (!forever) {
      auto left = deadline - steady_clock::now();
      if (left <= nanoseconds(0)) return false;
      // Round up so a sub-millisecond remainder still sleeps instead of spinning.
      ms = static_cast<int>(duration_cast<milliseconds>(left + microseconds(999)).count());
    }
    pollfd pfd{fd_.get(), POLLIN, 0};
    int rc = ::poll(&pfd, 1, ms);
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) {
      return make_error(Errc::kIoError, "doorbell: poll: {}", std::strerror(errno));
    }
  }
}

}  // namespace ringserve::protocol
