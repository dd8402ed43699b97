#include "ringserve/protocol/fd_passing.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace ringserve::protocol {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for `events` on the socket until the deadline. kTimeout when it passes.
Status wait_for(int socket, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return make_error(Errc::kTimeout, "socket not ready in time");
    pollfd pfd{socket, events, 0};
    const int rc = ::poll(&pfd, 1, static_cast<int>(left));
    if (rc > 0) return ok();  // readiness or an error condition: the next call reports it
    if (rc < 0 && errno != EINTR) {
      return make_error(Errc::kIoError, "poll: {}", std::strerror(errno));
    }
  }
}

Error send_error(int err) {
  if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) {
    return make_error(Errc::kUnavailable, "peer is gone: {}", std::strerror(err));
  }
  return make_error(Errc::kIoError, "sendmsg: {}", std::strerror(err));
}

// Takes ownership of every fd in the control messages.
std::vector<UniqueFd> collect_fds(msghdr& msg) {
  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.emplace_back(fd);
    }
  }
  return fds;
}

}  // namespace

Status send_with_fds(int socket, std::span<const uint8_t> bytes, std::span<const int> fds,
                     std::chrono::milliseconds timeout) {
  if (fds.size() > kMaxPassedFds) {
    return make_error(Errc::kInvalidArgument, "{} fds exceed the maximum of {}", fds.size(),
                      kMaxPassedFds);
  }
  if (bytes.empty() && !fds.empty()) {
    return make_error(Errc::kInvalidArgument, "fds must travel with at least one byte");
  }
  const auto deadline = Clock::now() + timeout;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  bool fds_sent = fds.empty();
  size_t sent = 0;
  while (sent < bytes.size()) {
    iovec iov{const_cast<uint8_t*>(bytes.data() + sent), bytes.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds_sent) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      fds_sent = true;  // the kernel attaches the fds to the first byte sent
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RS_TRY_STATUS(wait_for(socket, POLLOUT, deadline));
      continue;
    }
    return send_error(n < 0 ? errno : EPIPE);
  }
  return ok();
}

Expected<std::vector<UniqueFd>> recv_with_fds(int socket, std::span<uint8_t> bytes, size_t max_fds,
                                              std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  // Room for more fds than allowed, so an over-generous peer is detected
  // (and its fds closed) instead of silently truncated.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * (kMaxPassedFds + 1))];
  std::vector<UniqueFd> fds;
  size_t received = 0;
  while (received < bytes.size()) {
    iovec iov{bytes.data() + received, bytes.size() - received};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RS_TRY_STATUS(wait_for(socket, POLLIN, deadline));
      continue;
    }
    if (n < 0) return make_error(Errc::kIoError, "recvmsg: {}", std::strerror(errno));
    auto got = collect_fds(msg);
    for (auto& fd : got) fds.push_back(std::move(fd));
    if ((msg.msg_flags & MSG_CTRUNC) != 0) {
      return make_error(Errc::kProtocolError, "peer sent more fds than fit (control truncated)");
    }
    if (fds.size() > max_fds) {
      return make_error(Errc::kProtocolError, "peer sent {} fds, at most {} expected", fds.size(),
                        max_fds);
    }
    if (n == 0) {
      return make_error(Errc::kUnavailable, "peer closed the socket after {} of {} bytes", received,
                        bytes.size());
    }
    received += static_cast<size_t>(n);
  }
  return fds;
}

Status send_frame(int socket, const Frame& frame, std::span<const int> fds,
                  std::chrono::milliseconds timeout) {
  if (frame.empty()) return make_error(Errc::kInvalidArgument, "empty frame");
  return send_with_fds(socket, frame.as_frame(), fds, timeout);
}

Expected<ReceivedFrame> recv_frame(int socket, const DecodeLimits& limits, size_t max_fds,
                                   std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto remaining = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };
  std::array<uint8_t, kFrameHeaderBytes> header{};
  ReceivedFrame frame;
  frame.fds = RS_TRY(recv_with_fds(socket, header, max_fds, remaining()));
  const uint32_t size = RS_TRY(parse_frame_header(header, limits));
  frame.payload.resize(size);
  auto more = RS_TRY(recv_with_fds(socket, frame.payload, max_fds - frame.fds.size(), remaining()));
  for (auto& fd : more) frame.fds.push_back(std::move(fd));
  return frame;
}

}  // namespace ringserve::protocol
