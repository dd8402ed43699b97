// The ringserve C++ client SDK.
//
//   auto client = ringserve::Client::connect();            // default socket
//   if (!client) { ... client.error().code == Errc::kUnavailable: no server ... }
//   ringserve::GenerateRequest req;
//   req.prompt = ringserve::protocol::PromptText{"Hello"};
//   auto stream = (*client)->generate(req);
//   while (auto event = stream->next()) {                   // Expected<optional<Event>>
//     if (!*event) break;                                    // finished
//     ... std::get_if<ringserve::TokenEvent>(&**event) ...
//   }
//
// One Client is one connection (a Unix socket, plus a shared-memory ring
// pair unless ClientOptions::use_shm is false). It is thread-safe: any
// number of threads may run requests over it at once; one reader thread
// delivers each event to the request it belongs to.
//
// Errors are values (ringserve::Expected). Codes a caller can act on:
//   kUnavailable      connect(): no server listens at the path
//   kVersionMismatch  the server speaks another protocol version
//   kIoError          the server went away mid-stream (or the connection broke)
//   kTimeout          nothing arrived within ClientOptions::read_timeout
//   anything else     from a request: the server rejected it; the message
//                     starts with "server rejected request <id>:" and carries
//                     the server's own text (kTooLarge, kResourceExhausted,
//                     kInvalidArgument, kUnsupported, kUnavailable when the
//                     server is shutting down, ...)
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "ringserve/common/expected.h"
#include "ringserve/protocol/messages.h"

namespace ringserve {

struct ClientOptions {
  bool use_shm = true;  // false: every message goes over the socket
  std::chrono::milliseconds connect_timeout{5000};
  // Longest wait for the next event of a request, or a reply; 0: no limit.
  std::chrono::milliseconds read_timeout{60000};
  std::string client_name = "ringserve-client";
  // Ring sizes to ask for (0: the server's default; the server may clamp).
  uint32_t request_ring_bytes = 0;
  uint32_t event_ring_bytes = 0;
};

// The request. Set exactly one prompt form. request_id is assigned by
// generate() (the value here is ignored).
using GenerateRequest = protocol::GenerateRequest;
using SamplingParams = protocol::SamplingParams;
using TokenEvent = protocol::TokenEvent;
using Done = protocol::Done;
using FinishReason = protocol::FinishReason;
using ServerStats = protocol::Stats;
using ServerInfo = protocol::HelloAck;

// What a request produces: any number of TokenEvents, then exactly one Done.
using Event = std::variant<TokenEvent, Done>;

class Connection;     // internal
struct RequestState;  // internal

// The events of one request, pulled one at a time. Move-only. Destroying an
// unfinished Stream cancels its request.
class Stream {
 public:
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  uint64_t id() const { return id_; }

  // Blocks for the next event. nullopt once Done has been returned.
  // Errors: kTimeout (the request stays live; calling next() again keeps
  // waiting), kIoError (server gone), the server's rejection.
  Expected<std::optional<Event>> next();

  // Asks the server to stop; the stream then ends with Done (cancelled).
  Status cancel();

 private:
  friend class Client;
  Stream(std::shared_ptr<Connection> connection, std::shared_ptr<RequestState> state, uint64_t id);
  void abandon() noexcept;
  std::shared_ptr<Connection> connection_;
  std::shared_ptr<RequestState> state_;
  uint64_t id_ = 0;
  bool finished_ = false;
};

class Client {
 public:
  // Default socket: $XDG_RUNTIME_DIR/ringserve.sock, else
  // /tmp/ringserve-$UID/ringserve.sock (the server's default).
  static std::string default_socket_path();

  static Expected<std::unique_ptr<Client>> connect(const std::string& socket_path,
                                                   const ClientOptions& options = {});
  static Expected<std::unique_ptr<Client>> connect() { return connect(default_socket_path()); }

  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Pull form: returns once the request is sent.
  Expected<Stream> generate(const GenerateRequest& request);

  // Callback form: blocks until the request ends; `on_tokens` runs on the
  // calling thread for each TokenEvent. Returns the Done.
  using TokenCallback = std::function<void(const TokenEvent&)>;
  Expected<Done> generate(const GenerateRequest& request, const TokenCallback& on_tokens);

  // Cancels by the id a Stream reports; unknown or finished ids are a no-op.
  Status cancel(uint64_t request_id);

  Expected<ServerStats> stats();
  // Round-trip time of a Ping.
  Expected<std::chrono::nanoseconds> ping();

  // What the server said in its HelloAck (model, limits, session id).
  const ServerInfo& server_info() const;
  bool uses_shm() const;
  // False once the server has gone away.
  bool connected() const;

 private:
  explicit Client(std::shared_ptr<Connection> connection);
  std::shared_ptr<Connection> connection_;
};

}  // namespace ringserve
