// Blocking Unix-socket primitives for the client.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "ringserve/common/expected.h"
#include "ringserve/protocol/unique_fd.h"

namespace ringserve::client_detail {

// kUnavailable: nothing listens at `path` (no file, refused); kPermissionDenied;
// kTimeout: the listener's backlog stayed full for `timeout`.
Expected<protocol::UniqueFd> connect_unix(const std::string& path,
                                          std::chrono::milliseconds timeout);

// Reads exactly out.size() bytes. kIoError on EOF ("closed") or failure.
Status read_exact(int fd, std::span<uint8_t> out);

// Writes all bytes (MSG_NOSIGNAL). kIoError when the peer is gone,
// kTimeout when SO_SNDTIMEO expires.
Status write_all(int fd, std::span<const uint8_t> bytes);

}  // namespace ringserve::client_detail
