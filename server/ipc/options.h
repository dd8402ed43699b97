// Settings of the socket server: where it listens and the limits it
// enforces per session. Each limit breach is answered with an Error on the
// wire, never with a silent drop.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "ringserve/common/expected.h"

namespace ringserve::ipc {

struct ServerOptions {
  std::string socket_path = default_socket_path();
  mode_t socket_mode = 0600;
  std::string server_name = "ringserve";

  uint32_t max_sessions = 64;
  uint32_t max_inflight_per_session = 64;
  uint32_t max_prompt_tokens = 32768;
  uint32_t max_frame_bytes = 1u << 20;
  // Outgoing messages a session may hold before it stops reading new
  // requests from that client (backpressure). Token events already owed to
  // in-flight requests are still queued past this bound, up to
  // max_session_backlog_bytes.
  uint32_t session_queue_limit = 256;
  // Bytes of events a session may hold for a client that is not reading
  // them (queued on the socket or waiting for room in the event ring; what
  // the kernel or the ring already took does not count). At it, the session
  // stops reading new requests, as at session_queue_limit. Past it, the
  // session's in-flight requests are cancelled and each is ended with an
  // Error (kResourceExhausted), queued behind what is already pending. A
  // session whose backlog would pass twice this even so is closed.
  uint64_t max_session_backlog_bytes = 64ull << 20;
  // Shared-memory ring sizes; a client may ask for less, never for more.
  uint32_t request_ring_bytes = 1u << 20;
  uint32_t event_ring_bytes = 1u << 20;
  bool allow_shm = true;

  std::chrono::milliseconds shutdown_grace{10000};

  // $XDG_RUNTIME_DIR/ringserve.sock, else /tmp/ringserve-$UID/ringserve.sock.
  static std::string default_socket_path();
};

// Errors: kInvalidArgument naming the offending option.
Status validate(const ServerOptions& options);

// Registers --socket, --socket-mode, --max-sessions, --max-inflight,
// --max-prompt-tokens, --max-frame-bytes, --session-queue,
// --max-session-backlog-bytes, --request-ring-bytes, --event-ring-bytes,
// --no-shm and --shutdown-grace-ms on `app`, writing into
// `options` (which must outlive parsing). Call validate() after parsing.
void add_cli_flags(CLI::App& app, ServerOptions& options);

}  // namespace ringserve::ipc
