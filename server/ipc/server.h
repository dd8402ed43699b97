// The Unix-socket server: accepts clients, runs one Session per client on
// its own strand, and shuts down gracefully.
//
// Threading: everything runs on the io_context given to the constructor,
// which may be run by any number of threads. The Dispatcher and the
// tokenizer must outlive the io_context's last handler.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "ipc/options.h"
#include "ipc/socket_file.h"
#include "scheduler/request.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::ipc {

struct ServerContext;
class Session;

class Server {
 public:
  // Without a tokenizer, text and chat prompts are refused (kUnsupported);
  // token-id prompts work.
  Server(boost::asio::io_context& io, ServerOptions options, serve::Dispatcher& dispatcher,
         std::shared_ptr<const tokenizer::Tokenizer> tokenizer = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Validates the options, claims the socket path (refusing one a live
  // server owns, clearing a stale one) and starts accepting. Returns once
  // clients can connect. Errors: kInvalidArgument, kIoError.
  Status start();

  const std::string& socket_path() const;

  // Closes the listener and removes the socket file; sessions continue.
  // Thread-safe.
  void stop_accepting();

  // Graceful stop (thread-safe): stop accepting; refuse new requests; let
  // in-flight ones finish for up to `grace`; then cancel the rest through
  // the dispatcher, and answer any the dispatcher does not end promptly
  // with Done (cancelled) directly; close every session. `on_complete` runs
  // on the io_context once all of that is over.
  void shutdown(std::chrono::milliseconds grace, std::function<void()> on_complete);

  size_t session_count() const;

 private:
  enum class Stop { kRunning, kDraining, kCancelling, kClosing, kDone };
  using Clock = std::chrono::steady_clock;

  void accept_next();
  void on_session_closed(uint64_t id);
  void stop_accepting_on_strand();
  void shutdown_tick();
  template <class F>
  void for_each_session(F&& f);

  boost::asio::io_context& io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::shared_ptr<ServerContext> ctx_;
  std::optional<SocketFile> socket_file_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer shutdown_timer_;
  bool accepting_ = false;
  uint64_t next_session_id_ = 1;

  mutable std::mutex sessions_mutex_;
  std::map<uint64_t, std::shared_ptr<Session>> sessions_;

  // Shutdown state (strand-confined).
  Stop stop_ = Stop::kRunning;
  Clock::time_point phase_deadline_{};
  std::function<void()> on_shutdown_complete_;
};

}  // namespace ringserve::ipc
