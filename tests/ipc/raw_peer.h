// A hand-driven client for tests that must break the rules: speak an old
// protocol version, send oversized or garbage frames, or scribble over the
// shared-memory ring. Uses the protocol library directly, not the SDK.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringserve/protocol/codec.h"
#include "ringserve/protocol/fd_passing.h"
#include "ringserve/protocol/shm_segment.h"
#include "ringserve/protocol/unique_fd.h"

namespace ringserve::testing {

class RawPeer {
 public:
  // Connects (no handshake). Aborts the test on failure via the Expected.
  static Expected<RawPeer> connect(const std::string& path);

  Status send_bytes(std::span<const uint8_t> bytes);
  Status send(const protocol::Frame& frame) { return send_bytes(frame.as_frame()); }

  // The next frame from the server (and its fds), or kUnavailable at EOF.
  Expected<protocol::ReceivedFrame> receive(
      std::chrono::milliseconds timeout = std::chrono::seconds(20));
  Expected<protocol::Message> receive_message(
      std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // Whether the server closed the connection (EOF) within `timeout`,
  // discarding any frames before it.
  bool wait_for_eof(std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // Hello (+ HelloAck); with want_shm the received fds are kept.
  Expected<protocol::HelloAck> handshake(bool want_shm, uint32_t version = 0);

  // After a granted shm handshake: overwrite the request ring's control
  // block and data with garbage, then ring the server's doorbell.
  Status scribble_request_ring(uint64_t seed);

  // The next event for this client: from the event ring when shared memory
  // was granted (attached on first use; scribbling is then impossible),
  // else from the socket. kTimeout when none arrives within `timeout`.
  Expected<protocol::Message> receive_event(
      std::chrono::milliseconds timeout = std::chrono::seconds(20));

  int fd() const { return fd_.get(); }

 private:
  protocol::UniqueFd fd_;
  std::vector<protocol::UniqueFd> shm_fds_;
  std::optional<protocol::RingReader> events_;
  std::vector<uint8_t> record_;
};

}  // namespace ringserve::testing
