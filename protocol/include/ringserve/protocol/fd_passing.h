// Passing file descriptors with a frame over a Unix stream socket
// (SCM_RIGHTS), for the HelloAck that grants a shared-memory segment.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "ringserve/common/expected.h"
#include "ringserve/protocol/codec.h"
#include "ringserve/protocol/unique_fd.h"

namespace ringserve::protocol {

inline constexpr size_t kMaxPassedFds = 8;

// Sends all of `bytes`; the fds ride with the first byte. Works on blocking
// and non-blocking sockets (polls for writability); kTimeout after
// `timeout`, kUnavailable if the peer is gone (EPIPE; no SIGPIPE is raised).
Status send_with_fds(int socket, std::span<const uint8_t> bytes, std::span<const int> fds,
                     std::chrono::milliseconds timeout);

// Receives exactly bytes.size() bytes and the fds that arrive with them
// (received close-on-exec). More than max_fds fds, or truncated control
// data, is kProtocolError (every received fd is closed). EOF first:
// kUnavailable. kTimeout after `timeout`.
Expected<std::vector<UniqueFd>> recv_with_fds(int socket, std::span<uint8_t> bytes, size_t max_fds,
                                              std::chrono::milliseconds timeout);

// Frame helpers: send frame.as_frame() with fds; receive one size-prefixed
// frame (checked with parse_frame_header before the body is allocated) and
// any fds that came with it. The payload is ready for decode_envelope().
Status send_frame(int socket, const Frame& frame, std::span<const int> fds,
                  std::chrono::milliseconds timeout);

struct ReceivedFrame {
  std::vector<uint8_t> payload;  // one Envelope, heap-aligned
  std::vector<UniqueFd> fds;
};
Expected<ReceivedFrame> recv_frame(int socket, const DecodeLimits& limits, size_t max_fds,
                                   std::chrono::milliseconds timeout);

}  // namespace ringserve::protocol
