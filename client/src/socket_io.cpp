#include "socket_io.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringserve::client_detail {

Expected<protocol::UniqueFd> connect_unix(const std::string& path,
                                          std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return make_error(Errc::kInvalidArgument, "socket path must be 1..{} bytes: '{}'",
                      sizeof(addr.sun_path) - 1, path);
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  protocol::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return make_error(Errc::kIoError, "socket: {}", std::strerror(errno));

  // A Unix-socket connect only waits when the listener's backlog is full;
  // retry until the deadline instead of blocking without one.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) break;
    const int err = errno;
    if (err == EINTR) continue;
    if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR) {
      return make_error(Errc::kUnavailable, "no ringserve server at {} (connect: {})", path,
                        std::strerror(err));
    }
    if (err == EACCES || err == EPERM) {
      return make_error(Errc::kPermissionDenied, "connect {}: {}", path, std::strerror(err));
    }
    if (err == EAGAIN && std::chrono::steady_clock::now() < deadline) {
      ::usleep(1000);
      continue;
    }
    if (err == EAGAIN) {
      return make_error(Errc::kTimeout, "connect {}: server busy for {} ms", path, timeout.count());
    }
    return make_error(Errc::kIoError, "connect {}: {}", path, std::strerror(err));
  }
  return fd;
}

Status read_exact(int fd, std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::recv(fd, out.data() + done, out.size() - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return make_error(Errc::kIoError, "server closed the connection");
    if (errno == EINTR) continue;
    return make_error(Errc::kIoError, "reading from the server: {}", std::strerror(errno));
  }
  return ok();
}

Status write_all(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n >= 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return make_error(Errc::kTimeout, "the server is not reading (send timed out)");
    }
    return make_error(Errc::kIoError, "server closed the connection ({})", std::strerror(errno));
  }
  return ok();
}

}  // namespace ringserve::client_detail
