#include "ipc/options.h"

#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>

namespace ringserve::ipc {

std::string ServerOptions::default_socket_path() {
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime) {
    return std::string(runtime) + "/ringserve.sock";
  }
  return fmt::format("/tmp/ringserve-{}/ringserve.sock", ::getuid());
}

Status validate(const ServerOptions& o) {
  if (o.socket_path.empty()) return make_error(Errc::kInvalidArgument, "--socket: empty path");
  if (o.socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return make_error(Errc::kInvalidArgument, "--socket: path longer than {} bytes: {}",
                      sizeof(sockaddr_un{}.sun_path) - 1, o.socket_path);
  }
  if ((o.socket_mode & ~0777u) != 0) {
    return make_error(Errc::kInvalidArgument, "--socket-mode: {:o} is not a permission mode",
                      o.socket_mode);
  }
  if ((o.socket_mode & 0600u) != 0600u) {
    return make_error(Errc::kInvalidArgument,
                      "--socket-mode: {:04o} locks out the server's own user (need 0600 at least)",
                      o.socket_mode);
  }
  if (o.max_sessions == 0) return make_error(Errc::kInvalidArgument, "--max-sessions must be >= 1");
  if (o.max_inflight_per_session == 0) {
    return make_error(Errc::kInvalidArgument, "--max-inflight must be >= 1");
  }
  if (o.max_prompt_tokens == 0) {
    return make_error(Errc::kInvalidArgument, "--max-prompt-tokens must be >= 1");
  }
  // A HelloAck and a Stats reply must always fit.
  if (o.max_frame_bytes < 4096) {
    return make_error(Errc::kInvalidArgument, "--max-frame-bytes must be >= 4096");
  }
  if (o.session_queue_limit == 0) {
    return make_error(Errc::kInvalidArgument, "--session-queue must be >= 1");
  }
  // One event of the largest frame size must never trip the limit alone.
  if (o.max_session_backlog_bytes < 2ull * o.max_frame_bytes) {
    return make_error(Errc::kInvalidArgument,
                      "--max-session-backlog-bytes must be >= 2 x --max-frame-bytes ({})",
                      2ull * o.max_frame_bytes);
  }
  if (o.max_session_backlog_bytes > (1ull << 40)) {
    return make_error(Errc::kInvalidArgument, "--max-session-backlog-bytes must be <= 1 TiB");
  }
  if (o.shutdown_grace.count() < 0) {
    return make_error(Errc::kInvalidArgument, "--shutdown-grace-ms must be >= 0");
  }
  return ok();
}

void add_cli_flags(CLI::App& app, ServerOptions& o) {
  const std::string group = "IPC";
  app.add_option("--socket", o.socket_path, "Unix socket path")
      ->envname("RINGSERVE_SOCKET")
      ->capture_default_str()
      ->group(group);
  app.add_option_function<std::string>(
         "--socket-mode",
         [&o](const std::string& text) {
           char* end = nullptr;
           unsigned long mode = std::strtoul(text.c_str(), &end, 8);
           if (text.empty() || *end != '\0' || mode > 0777) {
             throw CLI::ValidationError("--socket-mode", "expected an octal mode such as 0660");
           }
           o.socket_mode = static_cast<mode_t>(mode);
         },
         "Socket file permissions, octal (default 0600: only this user)")
      ->group(group);
  app.add_option("--max-sessions", o.max_sessions, "Most concurrent client sessions")
      ->capture_default_str()
      ->group(group);
  app.add_option("--max-inflight", o.max_inflight_per_session,
                 "Most unfinished requests per session")
      ->capture_default_str()
      ->group(group);
  app.add_option("--max-prompt-tokens", o.max_prompt_tokens, "Longest accepted prompt, in tokens")
      ->capture_default_str()
      ->group(group);
  app.add_option("--max-frame-bytes", o.max_frame_bytes, "Largest accepted message, in bytes")
      ->capture_default_str()
      ->group(group);
  app.add_option("--session-queue", o.session_queue_limit,
                 "Outgoing messages queued per session before its requests stop being read")
      ->capture_default_str()
      ->group(group);
  app.add_option("--max-session-backlog-bytes", o.max_session_backlog_bytes,
                 "Event bytes queued per session for a client that is not reading them; past "
                 "it the session's requests are cancelled and ended with an error, and past "
                 "twice it the session is closed (at least 2 x --max-frame-bytes)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--request-ring-bytes", o.request_ring_bytes,
                 "Shared-memory request ring size per session")
      ->capture_default_str()
      ->group(group);
  app.add_option("--event-ring-bytes", o.event_ring_bytes,
                 "Shared-memory event ring size per session")
      ->capture_default_str()
      ->group(group);
  app.add_flag_callback(
         "--no-shm", [&o] { o.allow_shm = false; },
         "Refuse shared-memory rings; every client uses the socket")
      ->group(group);
  app.add_option_function<int64_t>(
         "--shutdown-grace-ms",
         [&o](int64_t ms) { o.shutdown_grace = std::chrono::milliseconds(ms); },
         "On SIGINT/SIGTERM, how long in-flight requests may finish before they are cancelled "
         "(default 10000)")
      ->group(group);
}

}  // namespace ringserve::ipc
