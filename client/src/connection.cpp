#include "connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

#include "ringserve/protocol/fd_passing.h"
#include "socket_io.h"

namespace ringserve {
namespace {

// Events may be as large as the server allows frames; accept generously
// (the server is trusted more than a client, but is still verified).
constexpr uint32_t kClientMaxFrameBytes = 64u << 20;
// How long the reader busy-polls the event ring before sleeping on its
// doorbell: short enough not to burn a core, long enough to catch the next
// token of a running stream without a wakeup.
constexpr auto kReaderSpin = std::chrono::microseconds(20);

}  // namespace

Expected<std::shared_ptr<Connection>> Connection::open(const std::string& socket_path,
                                                       const ClientOptions& options) {
  auto fd = RS_TRY(client_detail::connect_unix(socket_path, options.connect_timeout));
  std::shared_ptr<Connection> c(new Connection(std::move(fd), options));
  RS_TRY_STATUS(c->handshake());
  c->reader_ = std::thread([raw = c.get()] { raw->read_loop(); });
  return c;
}

Connection::Connection(protocol::UniqueFd socket, ClientOptions options)
    : socket_(std::move(socket)), options_(std::move(options)) {
  limits_.max_frame_bytes = kClientMaxFrameBytes;
}

Connection::~Connection() {
  stopping_.store(true);
  // Wakes the reader: its recv/poll sees EOF.
  ::shutdown(socket_.get(), SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
}

Status Connection::handshake() {
  // The fd-passing helpers honour their timeout only on a non-blocking
  // socket; the reader thread later wants a blocking one.
  const int flags = ::fcntl(socket_.get(), F_GETFL);
  ::fcntl(socket_.get(), F_SETFL, flags | O_NONBLOCK);
  Status result = exchange_hello();
  ::fcntl(socket_.get(), F_SETFL, flags & ~O_NONBLOCK);
  return result;
}

Status Connection::exchange_hello() {
  const auto timeout = options_.read_timeout.count() > 0
                           ? options_.read_timeout
                           : std::chrono::milliseconds(std::chrono::hours(24 * 365));
  protocol::Hello hello;
  hello.client_name = options_.client_name;
  hello.want_shm = options_.use_shm;
  hello.request_ring_bytes = options_.request_ring_bytes;
  hello.event_ring_bytes = options_.event_ring_bytes;
  Status sent = protocol::send_frame(socket_.get(), protocol::encode(hello), {}, timeout);
  // A server refusing us (too many sessions) may answer and close before
  // our Hello lands; its Error is still waiting in our receive queue.
  auto received = protocol::recv_frame(socket_.get(), limits_, protocol::kSegmentFdCount,
                                       sent ? timeout : std::chrono::milliseconds(100));
  if (!sent && !received) return sent.error();
  if (!received) {
    Error e = std::move(received).error();
    if (e.code == Errc::kUnavailable) {
      return make_error(Errc::kIoError, "server closed the connection during the handshake");
    }
    return with_context(std::move(e), "handshake");
  }
  auto message = RS_TRY(protocol::decode_message(received->payload, limits_));
  if (const auto* error = std::get_if<protocol::ErrorMessage>(&message)) {
    return Error{error->code, "server refused the connection: " + error->message};
  }
  const auto* ack = std::get_if<protocol::HelloAck>(&message);
  if (!ack) {
    return make_error(Errc::kProtocolError, "expected HelloAck, got {}",
                      protocol::message_name(message));
  }
  if (ack->protocol_version != protocol::kProtocolVersion) {
    return make_error(Errc::kVersionMismatch, "server speaks protocol version {}, we speak {}",
                      ack->protocol_version, protocol::kProtocolVersion);
  }
  ack_ = *ack;
  if (ack_.shm_granted) {
    if (received->fds.size() != protocol::kSegmentFdCount) {
      return make_error(Errc::kProtocolError, "HelloAck granted shared memory with {} fds, not {}",
                        received->fds.size(), protocol::kSegmentFdCount);
    }
    auto segment = RS_TRY(protocol::ShmSegment::attach(received->fds));
    request_writer_ = RS_TRY(segment.request_writer());
    event_reader_ = RS_TRY(segment.event_reader());
    shm_.emplace(std::move(segment));
  }
  // Sends block while the server applies backpressure; bound that wait.
  if (options_.read_timeout.count() > 0) {
    timeval tv{};
    tv.tv_sec = options_.read_timeout.count() / 1000;
    tv.tv_usec = (options_.read_timeout.count() % 1000) * 1000;
    ::setsockopt(socket_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  return ok();
}

Expected<std::shared_ptr<RequestState>> Connection::add_request(uint64_t id) {
  std::lock_guard lock(map_mutex_);
  if (dead_) return *dead_;
  auto state = std::make_shared<RequestState>();
  requests_[id] = state;
  return state;
}

void Connection::remove_request(uint64_t id) {
  std::lock_guard lock(map_mutex_);
  requests_.erase(id);
}

Status Connection::send(const protocol::Frame& frame) {
  if (!alive_.load()) {
    std::lock_guard lock(map_mutex_);
    return dead_ ? *dead_ : make_error(Errc::kIoError, "connection closed");
  }
  std::lock_guard lock(send_mutex_);
  if (shm_ && frame.payload().size() <= request_writer_.max_payload()) {
    protocol::WaitOptions wait;
    wait.timeout = options_.read_timeout.count() > 0
                       ? std::chrono::nanoseconds(options_.read_timeout)
                       : std::chrono::nanoseconds(-1);
    Status written = request_writer_.write(frame.payload(), wait);
    if (!written && written.error().code == Errc::kTimeout) {
      return make_error(Errc::kTimeout, "the server is not reading requests (ring full)");
    }
    return written;
  }
  // No ring, or a request too large for it: the socket carries it.
  return client_detail::write_all(socket_.get(), frame.as_frame());
}

Expected<protocol::Message> Connection::call(const protocol::Frame& frame, uint64_t nonce) {
  auto promise = std::make_shared<std::promise<Expected<protocol::Message>>>();
  auto future = promise->get_future();
  {
    std::lock_guard lock(map_mutex_);
    if (dead_) return *dead_;
    calls_[nonce] = promise;
  }
  if (Status sent = send(frame); !sent) {
    std::lock_guard lock(map_mutex_);
    calls_.erase(nonce);
    return sent.error();
  }
  if (options_.read_timeout.count() > 0 &&
      future.wait_for(options_.read_timeout) != std::future_status::ready) {
    std::lock_guard lock(map_mutex_);
    calls_.erase(nonce);
    return make_error(Errc::kTimeout, "no reply from the server within {} ms",
                      options_.read_timeout.count());
  }
  return future.get();
}

Status Connection::read_socket_frame() {
  std::array<uint8_t, protocol::kFrameHeaderBytes> header{};
  RS_TRY_STATUS(client_detail::read_exact(socket_.get(), header));
  uint32_t size = RS_TRY(protocol::parse_frame_header(header, limits_));
  std::vector<uint8_t> body(size);
  RS_TRY_STATUS(client_detail::read_exact(socket_.get(), body));
  deliver(RS_TRY(protocol::decode_message(body, limits_)));
  return ok();
}

void Connection::read_loop() {
  Error reason = make_error(Errc::kIoError, "server closed the connection");
  for (;;) {
    if (!shm_) {
      Status read = read_socket_frame();
      if (!read) {
        reason = std::move(read).error();
        break;
      }
      continue;
    }
    // Shared memory: drain the event ring (busy-polling briefly once it is
    // empty), then sleep on its doorbell and on the socket, which carries
    // session errors and, by its EOF, liveness.
    bool took = false;
    bool broken = false;
    const auto spin_until = std::chrono::steady_clock::now() + kReaderSpin;
    do {
      auto got = event_reader_.try_read(record_);
      if (!got) {
        reason = with_context(std::move(got).error(), "event ring");
        broken = true;
        break;
      }
      if (!*got) continue;
      auto message = protocol::decode_message(record_, limits_);
      if (!message) {
        reason = with_context(std::move(message).error(), "event ring record");
        broken = true;
        break;
      }
      deliver(std::move(*message));
      took = true;
      break;
    } while (std::chrono::steady_clock::now() < spin_until);
    if (broken) break;
    if (took) continue;
    // Announce the sleep, then re-check, so a record published in between
    // is not slept through.
    if (event_reader_.prepare_wait()) {
      event_reader_.finish_wait();
      continue;
    }
    pollfd fds[2] = {{event_reader_.wait_fd(), POLLIN, 0}, {socket_.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    event_reader_.finish_wait();
    if (n < 0 && errno != EINTR) {
      reason = make_error(Errc::kIoError, "poll: {}", std::strerror(errno));
      break;
    }
    if (n > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      Status read = read_socket_frame();
      if (!read) {
        // Events the server wrote before it went away are still in the ring.
        while (true) {
          auto last = event_reader_.try_read(record_);
          if (!last || !*last) break;
          auto message = protocol::decode_message(record_, limits_);
          if (!message) break;
          deliver(std::move(*message));
        }
        reason = std::move(read).error();
        break;
      }
    }
  }
  if (stopping_.load()) reason = make_error(Errc::kIoError, "client closed");
  fail_all(std::move(reason));
}

void Connection::deliver(protocol::Message message) {
  auto push = [this](uint64_t id, Event event, bool last) {
    std::shared_ptr<RequestState> state;
    {
      std::lock_guard lock(map_mutex_);
      auto it = requests_.find(id);
      if (it == requests_.end()) return;  // cancelled and dropped by its owner
      state = it->second;
      if (last) requests_.erase(it);
    }
    {
      std::lock_guard lock(state->mutex);
      state->events.push_back(std::move(event));
    }
    state->ready.notify_all();
  };
  auto answer = [this](uint64_t nonce, protocol::Message reply) {
    std::shared_ptr<std::promise<Expected<protocol::Message>>> promise;
    {
      std::lock_guard lock(map_mutex_);
      auto it = calls_.find(nonce);
      if (it == calls_.end()) return;
      promise = std::move(it->second);
      calls_.erase(it);
    }
    promise->set_value(std::move(reply));
  };

  if (auto* tokens = std::get_if<protocol::TokenEvent>(&message)) {
    uint64_t id = tokens->request_id;
    push(id, std::move(*tokens), false);
  } else if (auto* done = std::get_if<protocol::Done>(&message)) {
    uint64_t id = done->request_id;
    push(id, std::move(*done), true);
  } else if (auto* error = std::get_if<protocol::ErrorMessage>(&message)) {
    if (error->request_id == 0) {
      std::lock_guard lock(map_mutex_);
      session_error_ = Error{error->code, error->message};
      return;
    }
    std::shared_ptr<RequestState> state;
    {
      std::lock_guard lock(map_mutex_);
      auto it = requests_.find(error->request_id);
      if (it == requests_.end()) return;
      state = it->second;
      requests_.erase(it);
    }
    {
      std::lock_guard lock(state->mutex);
      state->error = Error{error->code, fmt::format("server rejected request {}: {}",
                                                    error->request_id, error->message)};
    }
    state->ready.notify_all();
  } else if (auto* stats = std::get_if<protocol::Stats>(&message)) {
    uint64_t nonce = stats->nonce;
    answer(nonce, std::move(message));
  } else if (auto* pong = std::get_if<protocol::Pong>(&message)) {
    uint64_t nonce = pong->nonce;
    answer(nonce, std::move(message));
  }
  // Anything else is a message a server never sends to a client; ignored.
}

void Connection::fail_all(Error error) {
  std::unordered_map<uint64_t, std::shared_ptr<RequestState>> requests;
  std::unordered_map<uint64_t, std::shared_ptr<std::promise<Expected<protocol::Message>>>> calls;
  {
    std::lock_guard lock(map_mutex_);
    if (session_error_) {
      error.message += fmt::format(" (server said: {})", session_error_->to_string());
    }
    dead_ = error;
    alive_.store(false);
    requests.swap(requests_);
    calls.swap(calls_);
  }
  for (auto& [id, state] : requests) {
    {
      std::lock_guard lock(state->mutex);
      if (!state->error) state->error = error;
    }
    state->ready.notify_all();
  }
  for (auto& [nonce, promise] : calls) promise->set_value(error);
}

}  // namespace ringserve
