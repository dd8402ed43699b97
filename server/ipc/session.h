// One connected client. Everything a session does runs on its own strand
// (the socket's executor): reading frames, the write queue (exactly one
// write in flight), its shared-memory channel, and the events the
// dispatcher's sinks post back from the engine thread.
//
// Outgoing events are bounded by --max-session-backlog-bytes: a client that
// stops reading has its in-flight requests cancelled and ended with an Error
// queued behind what it still owes the client, and is disconnected if the
// backlog would pass twice the limit even so (end_unread_requests()).
//
// Life: Hello -> HelloAck (with the segment fds when shared memory is
// granted) -> requests and events, over the rings or the socket -> EOF or a
// protocol violation -> every unfinished request is cancelled and the
// segment freed. The socket stays open for the whole session: its EOF is
// how a crashed client is noticed.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/local/stream_protocol.hpp>

#include "ipc/server_context.h"
#include "ipc/shm_channel.h"
#include "ringserve/protocol/codec.h"

namespace ringserve::ipc {

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;
  using ClosedCallback = std::function<void(uint64_t session_id)>;

  Session(Socket socket, uint64_t id, std::shared_ptr<ServerContext> context,
          ClosedCallback on_closed);
  ~Session();

  uint64_t id() const { return id_; }

  // All of these are thread-safe: they post to the session's strand.
  void start();
  // Sends `error` (session-level) and closes: used when over --max-sessions.
  void reject(Error error);
  // Shutdown phase 1: new requests are refused, running ones continue.
  void drain();
  // Shutdown phase 2: asks the dispatcher to cancel every unfinished request.
  void cancel_all();
  // Shutdown phase 3: answers every still unfinished request with Done
  // (cancelled) itself, flushes, closes.
  void finish();
  // Closes at once, whatever is still queued.
  void terminate();

  // From the dispatcher's sinks (any thread).
  void post_tokens(uint64_t request_id, serve::TokenDelta delta);
  void post_done(uint64_t request_id, serve::Completion done);

 private:
  enum class Phase { kHandshake, kOpen, kClosing, kClosed };
  enum class Source { kSocket, kRing };

  // Socket reading (session_io.cpp).
  void read_header();
  void read_body(uint32_t size);
  void skip_body(uint32_t remaining);
  // Socket writing: one async_write in flight, the rest queued.
  void write_socket(protocol::Frame frame);
  void write_next();
  void close_after_flush();
  void close_now(std::string_view why);

  // Messages (session.cpp).
  void on_frame(std::vector<uint8_t> payload, Source source);
  void handle(protocol::Message message, Source source);
  void on_hello(const protocol::Hello& hello);
  void on_generate(protocol::GenerateRequest request);
  void on_cancel(const protocol::Cancel& cancel);
  void on_tokens(uint64_t request_id, serve::TokenDelta delta);
  void on_done(uint64_t request_id, serve::Completion done);
  void fail(const Error& error);
  void send_event(protocol::Frame frame);
  // Over --max-session-backlog-bytes: cancels every in-flight request and
  // queues an Error for each (no event already queued is dropped).
  void end_unread_requests(size_t pending_bytes);
  void reject_request(uint64_t client_id, const Error& error);
  void update_backpressure();
  void forget_all_requests();

  size_t queued() const;
  // Event bytes not yet taken by the kernel (socket) or the event ring.
  size_t backlog_bytes() const;

  Socket socket_;
  const uint64_t id_;
  std::shared_ptr<ServerContext> ctx_;
  ClosedCallback on_closed_;
  std::string peer_;  // "pid=.. uid=.. gid=.." for log lines

  Phase phase_ = Phase::kHandshake;
  bool draining_ = false;

  // Reading.
  std::array<uint8_t, protocol::kFrameHeaderBytes> header_{};
  std::vector<uint8_t> body_;
  bool read_paused_ = false;   // backpressure on the socket
  bool read_waiting_ = false;  // paused with the next read not yet issued
  bool shm_paused_ = false;    // backpressure on the request ring

  // Writing.
  std::deque<protocol::Frame> write_queue_;
  size_t write_queue_bytes_ = 0;  // including the frame being written
  bool writing_ = false;
  bool close_when_flushed_ = false;

  std::unique_ptr<ShmChannel> shm_;

  // Unfinished requests: client-chosen id <-> server-wide id.
  std::unordered_map<uint64_t, uint64_t> by_client_;
  std::unordered_map<uint64_t, uint64_t> by_server_;
};

}  // namespace ringserve::ipc
