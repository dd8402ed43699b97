// Session: handshake, requests, and the events flowing back to the client.
#include "ipc/session.h"

#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <boost/asio/post.hpp>

#include "ringserve/protocol/fd_passing.h"

namespace ringserve::ipc {
namespace asio = boost::asio;

namespace {

// The dispatcher's sink for one request: hops from the engine thread to the
// session's strand. A session that is gone just drops the events.
class SessionSink final : public serve::RequestSink {
 public:
  SessionSink(std::weak_ptr<Session> session, uint64_t request_id)
      : session_(std::move(session)), request_id_(request_id) {}
  void on_tokens(serve::TokenDelta delta) override {
    if (auto s = session_.lock()) s->post_tokens(request_id_, std::move(delta));
  }
  void on_done(serve::Completion done) override {
    if (auto s = session_.lock()) s->post_done(request_id_, std::move(done));
  }

 private:
  std::weak_ptr<Session> session_;
  uint64_t request_id_;
};

std::string peer_credentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return "peer=unknown";
  return fmt::format("pid={} uid={} gid={}", cred.pid, cred.uid, cred.gid);
}

// Ring sizes: what the client asked for within the server's bounds, and an
// event ring that always has room for the largest frame we may send.
protocol::SegmentOptions segment_options(const ServerOptions& o, const protocol::Hello& hello,
                                         uint64_t session_id) {
  auto pick = [](uint32_t asked, uint32_t server) {
    return asked == 0 ? server : std::min(asked, server);
  };
  protocol::SegmentOptions s;
  s.request_ring_bytes = pick(hello.request_ring_bytes, o.request_ring_bytes);
  uint64_t event_floor = 2ull * o.max_frame_bytes + 64;
  s.event_ring_bytes = static_cast<uint32_t>(
      std::max<uint64_t>(pick(hello.event_ring_bytes, o.event_ring_bytes), event_floor));
  s.max_ring_bytes = std::max<uint32_t>(std::max(o.request_ring_bytes, o.event_ring_bytes),
                                        static_cast<uint32_t>(2 * event_floor));
  s.name = fmt::format("ringserve-session-{}", session_id);
  return s;
}

// How a request is ended when its client stops reading (and how one is
// refused while that lasts).
Error unread_events_error(size_t pending_bytes, uint64_t limit) {
  return make_error(Errc::kResourceExhausted,
                    "client is not reading its events: {} bytes were pending "
                    "(--max-session-backlog-bytes {})",
                    pending_bytes, limit);
}

}  // namespace

Session::Session(Socket socket, uint64_t id, std::shared_ptr<ServerContext> context,
                 ClosedCallback on_closed)
    : socket_(std::move(socket)),
      id_(id),
      ctx_(std::move(context)),
      on_closed_(std::move(on_closed)) {}

Session::~Session() = default;

void Session::start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->peer_ = peer_credentials(self->socket_.native_handle());
    self->ctx_->log->info("session {} connected: {}", self->id_, self->peer_);
    self->read_header();
  });
}

void Session::reject(Error error) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), error = std::move(error)] {
    self->ctx_->log->warn("session {} refused: {}", self->id_, error.to_string());
    self->phase_ = Phase::kClosing;
    self->write_socket(protocol::encode_error(0, error));
    self->close_after_flush();
  });
}

void Session::drain() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->draining_ = true; });
}

void Session::cancel_all() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    for (const auto& [server_id, client_id] : self->by_server_) {
      self->ctx_->log->debug("req={}:{} cancelled: shutdown grace period over", self->id_,
                             client_id);
      self->ctx_->dispatcher.cancel(server_id);
    }
  });
}

void Session::finish() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    // Forgotten first: a send may close the session (backlog ceiling).
    std::vector<uint64_t> client_ids;
    for (const auto& [server_id, client_id] : self->by_server_) client_ids.push_back(client_id);
    self->forget_all_requests();
    for (uint64_t client_id : client_ids) {
      protocol::Done done;
      done.request_id = client_id;
      done.reason = protocol::FinishReason::kCancelled;
      self->send_event(protocol::encode(done));
    }
    self->close_after_flush();
  });
}

void Session::terminate() {
  asio::post(socket_.get_executor(),
             [self = shared_from_this()] { self->close_now("terminated at shutdown"); });
}

void Session::post_tokens(uint64_t request_id, serve::TokenDelta delta) {
  asio::post(socket_.get_executor(),
             [self = shared_from_this(), request_id, delta = std::move(delta)]() mutable {
               self->on_tokens(request_id, std::move(delta));
             });
}

void Session::post_done(uint64_t request_id, serve::Completion done) {
  asio::post(socket_.get_executor(),
             [self = shared_from_this(), request_id, done = std::move(done)]() mutable {
               self->on_done(request_id, std::move(done));
             });
}

void Session::on_frame(std::vector<uint8_t> payload, Source source) {
  if (phase_ == Phase::kClosing || phase_ == Phase::kClosed) return;
  auto message = protocol::decode_message(payload, ctx_->limits);
  if (!message) {
    const Error& e = message.error();
    // Framing is intact for these: answer and carry on.
    if (e.code == Errc::kUnsupported || e.code == Errc::kTooLarge) {
      ctx_->log->warn("session {}: {}", id_, e.to_string());
      send_event(protocol::encode_error(0, e));
      return;
    }
    fail(with_context(e, source == Source::kRing ? "request ring record" : "socket frame"));
    return;
  }
  handle(std::move(*message), source);
}

void Session::handle(protocol::Message message, Source source) {
  if (phase_ == Phase::kHandshake) {
    if (auto* hello = std::get_if<protocol::Hello>(&message)) {
      on_hello(*hello);
    } else {
      fail(make_error(Errc::kProtocolError, "expected Hello first, got {}",
                      protocol::message_name(message)));
    }
    return;
  }
  if (auto* request = std::get_if<protocol::GenerateRequest>(&message)) {
    on_generate(std::move(*request));
  } else if (auto* cancel = std::get_if<protocol::Cancel>(&message)) {
    on_cancel(*cancel);
  } else if (auto* stats = std::get_if<protocol::StatsRequest>(&message)) {
    auto uptime = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - ctx_->started);
    send_event(protocol::encode(
        to_wire(ctx_->dispatcher.stats(), stats->nonce, ctx_->sessions.load(), uptime)));
  } else if (auto* ping = std::get_if<protocol::Ping>(&message)) {
    send_event(protocol::encode(protocol::Pong{ping->nonce, ping->client_time_ns}));
  } else {
    fail(make_error(Errc::kProtocolError, "unexpected {} from a client{}",
                    protocol::message_name(message),
                    source == Source::kRing ? " (request ring)" : ""));
  }
}

void Session::on_hello(const protocol::Hello& hello) {
  if (hello.protocol_version != protocol::kProtocolVersion) {
    Error e = make_error(Errc::kVersionMismatch,
                         "server speaks protocol version {}, client '{}' sent version {}",
                         protocol::kProtocolVersion, hello.client_name, hello.protocol_version);
    ctx_->log->warn("session {}: {}", id_, e.to_string());
    phase_ = Phase::kClosing;
    write_socket(protocol::encode_error(0, e));
    close_after_flush();
    return;
  }
  const auto& info = ctx_->dispatcher.engine_info();
  protocol::HelloAck ack;
  ack.server_name = ctx_->options.server_name;
  ack.session_id = id_;
  ack.model_name = info.model_name;
  ack.vocab_size = static_cast<uint32_t>(std::max(0, info.vocab_size));
  ack.max_context = static_cast<uint32_t>(std::max(0, info.max_context));
  ack.max_frame_bytes = ctx_->options.max_frame_bytes;
  ack.max_inflight = ctx_->options.max_inflight_per_session;
  ack.eos_token_ids = info.eos_token_ids;
  phase_ = Phase::kOpen;

  if (hello.want_shm && ctx_->options.allow_shm) {
    auto channel =
        ShmChannel::create(socket_.get_executor(), segment_options(ctx_->options, hello, id_));
    if (channel) {
      shm_ = std::move(*channel);
    } else {
      ctx_->log->warn("session {}: no shared memory ({}); using the socket", id_,
                      channel.error().to_string());
    }
  }
  ctx_->log->info("session {}: hello from '{}' (protocol {}, {})", id_, hello.client_name,
                  hello.protocol_version, shm_ ? "shared-memory rings" : "socket transport");
  if (!shm_) {
    write_socket(protocol::encode(ack));
    return;
  }
  ack.shm_granted = true;
  ack.shm_bytes = shm_->segment().size_bytes();
  // The HelloAck is the first frame of the session: the socket's send
  // buffer is empty, so this write completes at once.
  auto fds = shm_->segment().fds();
  Status sent = protocol::send_frame(socket_.native_handle(), protocol::encode(ack), fds,
                                     std::chrono::milliseconds(1000));
  if (!sent) {
    close_now("sending the shared-memory fds failed: " + sent.error().to_string());
    return;
  }
  shm_->on_drained([this] {
    if (close_when_flushed_ && !writing_) {
      close_now("closed after flushing");
    } else {
      update_backpressure();
    }
  });
  shm_->start([this](Expected<std::vector<uint8_t>> record) {
    if (!record) {
      fail(with_context(std::move(record).error(), "shared-memory ring"));
      return;
    }
    on_frame(std::move(*record), Source::kRing);
  });
}

void Session::on_generate(protocol::GenerateRequest wire) {
  const uint64_t client_id = wire.request_id;
  if (draining_) {
    reject_request(client_id, make_error(Errc::kUnavailable, "server is shutting down"));
    return;
  }
  if (by_client_.count(client_id)) {
    reject_request(client_id,
                   make_error(Errc::kInvalidArgument,
                              "request id {} is already in flight on this connection", client_id));
    return;
  }
  if (const size_t pending = backlog_bytes(); pending > ctx_->options.max_session_backlog_bytes) {
    reject_request(client_id,
                   unread_events_error(pending, ctx_->options.max_session_backlog_bytes));
    return;
  }
  if (by_client_.size() >= ctx_->options.max_inflight_per_session) {
    reject_request(client_id,
                   make_error(Errc::kResourceExhausted,
                              "{} requests already in flight on this connection (--max-inflight)",
                              by_client_.size()));
    return;
  }
  auto request = to_request(wire, ctx_->tokenizer.get(), ctx_->edge);
  if (!request) {
    reject_request(client_id, request.error());
    return;
  }
  const uint64_t server_id = ctx_->next_request_id.fetch_add(1);
  request->id = server_id;
  request->log_id = fmt::format("{}:{}", id_, client_id);
  const size_t prompt_tokens = request->prompt.size();
  by_client_.emplace(client_id, server_id);
  by_server_.emplace(server_id, client_id);
  ctx_->inflight.fetch_add(1);
  auto sink = std::make_shared<SessionSink>(weak_from_this(), server_id);
  Status submitted = ctx_->dispatcher.submit(std::move(*request), std::move(sink));
  if (!submitted) {
    by_client_.erase(client_id);
    by_server_.erase(server_id);
    ctx_->inflight.fetch_sub(1);
    reject_request(client_id, submitted.error());
    return;
  }
  ctx_->log->debug("req={}:{} submitted ({} prompt tokens, server id {})", id_, client_id,
                   prompt_tokens, server_id);
}

void Session::on_cancel(const protocol::Cancel& cancel) {
  auto it = by_client_.find(cancel.request_id);
  if (it == by_client_.end()) return;  // finished already, or never ours: a no-op
  ctx_->log->debug("req={}:{} cancel requested", id_, cancel.request_id);
  ctx_->dispatcher.cancel(it->second);
}

void Session::on_tokens(uint64_t server_id, serve::TokenDelta delta) {
  if (phase_ == Phase::kClosed) return;
  auto it = by_server_.find(server_id);
  if (it == by_server_.end()) return;
  const uint64_t client_id = it->second;
  protocol::Frame frame = protocol::encode(to_wire(delta, client_id));
  if (shm_ && frame.payload().size() > shm_->max_event_bytes()) {
    // The event can never fit the ring; ending the request cleanly beats
    // reordering it through the socket.
    ctx_->dispatcher.cancel(server_id);
    by_server_.erase(it);
    by_client_.erase(client_id);
    ctx_->inflight.fetch_sub(1);
    reject_request(client_id, make_error(Errc::kTooLarge,
                                         "a token event of {} bytes does not fit the event ring",
                                         frame.payload().size()));
    return;
  }
  ctx_->log->trace("req={}:{} +{} tokens", id_, client_id, delta.tokens.size());
  send_event(std::move(frame));
}

void Session::on_done(uint64_t server_id, serve::Completion done) {
  auto it = by_server_.find(server_id);
  if (it == by_server_.end()) return;
  const uint64_t client_id = it->second;
  by_server_.erase(it);
  by_client_.erase(client_id);
  ctx_->inflight.fetch_sub(1);
  if (phase_ == Phase::kClosed) return;
  ctx_->log->debug("req={}:{} done: {} prompt + {} completion tokens, reason {}", id_, client_id,
                   done.prompt_tokens, done.completion_tokens, static_cast<int>(done.reason));
  send_event(protocol::encode(to_wire(done, client_id)));
}

void Session::reject_request(uint64_t client_id, const Error& error) {
  ctx_->log->debug("req={}:{} rejected: {}", id_, client_id, error.to_string());
  send_event(protocol::encode_error(client_id, error));
}

void Session::fail(const Error& error) {
  if (phase_ == Phase::kClosing || phase_ == Phase::kClosed) return;
  ctx_->log->warn("session {} ({}): {}; disconnecting", id_, peer_, error.to_string());
  phase_ = Phase::kClosing;
  // Session-level errors go on the socket: the ring may be what broke.
  write_socket(protocol::encode_error(0, error));
  close_after_flush();
}

void Session::send_event(protocol::Frame frame) {
  if (phase_ == Phase::kClosed) return;
  const uint64_t limit = ctx_->options.max_session_backlog_bytes;
  const size_t pending = backlog_bytes();
  if (pending + frame.as_frame().size() > 2 * limit) {
    // Not even the errors ending its requests fit: dropping one would leave
    // the client waiting forever, so it goes, with everything it owes.
    ctx_->log->warn(
        "session {} ({}): client is not reading its events ({} bytes pending, twice "
        "--max-session-backlog-bytes {} reached); disconnecting",
        id_, peer_, pending, limit);
    close_now(fmt::format("{} event bytes pending, client not reading", pending));
    return;
  }
  if (shm_) {
    Status queued = shm_->send(std::move(frame));
    if (!queued) ctx_->log->warn("session {}: event dropped: {}", id_, queued.error().to_string());
  } else {
    write_socket(std::move(frame));
  }
  if (const size_t now_pending = backlog_bytes(); now_pending > limit && !by_server_.empty()) {
    end_unread_requests(now_pending);
  }
  update_backpressure();
}

void Session::end_unread_requests(size_t pending_bytes) {
  std::vector<uint64_t> client_ids;
  client_ids.reserve(by_client_.size());
  for (const auto& [client_id, server_id] : by_client_) client_ids.push_back(client_id);
  std::sort(client_ids.begin(), client_ids.end());
  std::vector<std::string> log_ids;
  log_ids.reserve(client_ids.size());
  for (uint64_t client_id : client_ids) log_ids.push_back(fmt::format("req={}:{}", id_, client_id));
  const uint64_t limit = ctx_->options.max_session_backlog_bytes;
  ctx_->log->warn(
      "session {} ({}): client is not reading its events ({} bytes pending, "
      "--max-session-backlog-bytes {}); cancelling {}",
      id_, peer_, pending_bytes, limit, fmt::join(log_ids, " "));
  // The scheduler frees their sequences and KV at its next step; events
  // still on their way (and their Done) find no request and are dropped.
  forget_all_requests();
  const Error error = unread_events_error(pending_bytes, limit);
  for (uint64_t client_id : client_ids) {
    send_event(protocol::encode_error(client_id, error));
  }
}

size_t Session::queued() const {
  return write_queue_.size() + (shm_ ? shm_->pending() : 0);
}

size_t Session::backlog_bytes() const {
  return write_queue_bytes_ + (shm_ ? shm_->pending_bytes() : 0);
}

void Session::update_backpressure() {
  if (phase_ != Phase::kOpen) return;
  const size_t limit = ctx_->options.session_queue_limit;
  const size_t depth = queued();
  const uint64_t byte_limit = ctx_->options.max_session_backlog_bytes;
  const size_t bytes = backlog_bytes();
  // In shared-memory mode only the request ring pauses: the socket keeps
  // being read because it is the liveness channel.
  bool& paused = shm_ ? shm_paused_ : read_paused_;
  // Hysteresis: pause at either limit, resume at half of both.
  const bool pause =
      paused ? depth > limit / 2 || bytes > byte_limit / 2 : depth >= limit || bytes >= byte_limit;
  if (pause == paused) return;
  paused = pause;
  ctx_->log->debug("session {}: {} messages ({} bytes) queued, reading {}", id_, depth, bytes,
                   pause ? "paused" : "resumed");
  if (shm_) {
    shm_->set_paused(pause);
  } else if (!pause && read_waiting_) {
    read_waiting_ = false;
    read_header();
  }
}

void Session::forget_all_requests() {
  for (const auto& [server_id, client_id] : by_server_) ctx_->dispatcher.cancel(server_id);
  ctx_->inflight.fetch_sub(static_cast<int64_t>(by_server_.size()));
  by_server_.clear();
  by_client_.clear();
}

}  // namespace ringserve::ipc
