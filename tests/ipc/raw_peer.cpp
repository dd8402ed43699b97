#include "raw_peer.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "ringserve/protocol/fd_passing.h"
#include "ringserve/protocol/ring_layout.h"

namespace ringserve::testing {

Expected<RawPeer> RawPeer::connect(const std::string& path) {
  RawPeer peer;
  peer.fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(peer.fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return make_error(Errc::kUnavailable, "connect {}: {}", path, std::strerror(errno));
  }
  // Non-blocking, so the fd-passing helpers' timeouts apply.
  ::fcntl(peer.fd_.get(), F_SETFL, ::fcntl(peer.fd_.get(), F_GETFL) | O_NONBLOCK);
  return peer;
}

Status RawPeer::send_bytes(std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd p{fd_.get(), POLLOUT, 0};
        ::poll(&p, 1, 1000);
        continue;
      }
      return make_error(Errc::kIoError, "send: {}", std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return ok();
}

Expected<protocol::ReceivedFrame> RawPeer::receive(std::chrono::milliseconds timeout) {
  protocol::DecodeLimits limits;
  limits.max_frame_bytes = 64u << 20;
  return protocol::recv_frame(fd_.get(), limits, protocol::kSegmentFdCount, timeout);
}

Expected<protocol::Message> RawPeer::receive_message(std::chrono::milliseconds timeout) {
  auto frame = RS_TRY(receive(timeout));
  protocol::DecodeLimits limits;
  limits.max_frame_bytes = 64u << 20;
  return protocol::decode_message(frame.payload, limits);
}

bool RawPeer::wait_for_eof(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  uint8_t buffer[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = ::recv(fd_.get(), buffer, sizeof(buffer), 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN) return true;  // reset: also gone
  }
}

Expected<protocol::HelloAck> RawPeer::handshake(bool want_shm, uint32_t version) {
  protocol::Hello hello;
  hello.protocol_version = version;
  hello.client_name = "raw-test-peer";
  hello.want_shm = want_shm;
  RS_TRY_STATUS(send(protocol::encode(hello)));
  auto frame = RS_TRY(receive());
  auto message = RS_TRY(protocol::decode_message(frame.payload, {}));
  if (auto* error = std::get_if<protocol::ErrorMessage>(&message)) {
    return Error{error->code, error->message};
  }
  auto* ack = std::get_if<protocol::HelloAck>(&message);
  if (!ack) return make_error(Errc::kProtocolError, "expected HelloAck");
  shm_fds_ = std::move(frame.fds);
  return *ack;
}

Status RawPeer::scribble_request_ring(uint64_t seed) {
  if (shm_fds_.size() != protocol::kSegmentFdCount) {
    return make_error(Errc::kInvalidArgument, "no shared memory granted");
  }
  int memfd = shm_fds_[protocol::kSegmentMemfd].get();
  struct stat st {};
  if (::fstat(memfd, &st) != 0) return make_error(Errc::kIoError, "fstat memfd");
  void* base = ::mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (base == MAP_FAILED) return make_error(Errc::kIoError, "mmap: {}", std::strerror(errno));
  protocol::SegmentHeader header{};
  std::memcpy(&header, base, sizeof(header));
  auto* region = static_cast<uint8_t*>(base) + header.request_ring_offset;
  std::mt19937_64 rng(seed);
  // Garbage records first, then a head no honest writer could publish.
  auto* data = region + protocol::kRingControlBytes;
  for (uint32_t i = 0; i < header.request_ring_capacity; ++i) data[i] = static_cast<uint8_t>(rng());
  auto* control = reinterpret_cast<protocol::RingControl*>(region);
  control->head = uint64_t{header.request_ring_capacity} * 5 + 3;
  ::munmap(base, st.st_size);
  uint64_t one = 1;
  if (::write(shm_fds_[protocol::kRequestDataBell].get(), &one, sizeof(one)) != sizeof(one)) {
    return make_error(Errc::kIoError, "ringing the request bell: {}", std::strerror(errno));
  }
  return ok();
}

Expected<protocol::Message> RawPeer::receive_event(std::chrono::milliseconds timeout) {
  if (!events_ && shm_fds_.size() == protocol::kSegmentFdCount) {
    auto segment = RS_TRY(protocol::ShmSegment::attach(shm_fds_));
    shm_fds_.clear();
    events_ = RS_TRY(segment.event_reader());  // keeps the mapping alive
  }
  if (!events_) return receive_message(timeout);
  protocol::WaitOptions wait;
  wait.timeout = timeout;
  RS_TRY_STATUS(events_->read(record_, wait));
  protocol::DecodeLimits limits;
  limits.max_frame_bytes = 64u << 20;
  return protocol::decode_message(record_, limits);
}

}  // namespace ringserve::testing
