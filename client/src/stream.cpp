#include "connection.h"
#include "ringserve/client/client.h"
#include "ringserve/protocol/codec.h"

namespace ringserve {

Stream::Stream(std::shared_ptr<Connection> connection, std::shared_ptr<RequestState> state,
               uint64_t id)
    : connection_(std::move(connection)), state_(std::move(state)), id_(id) {}

Stream::Stream(Stream&& other) noexcept
    : connection_(std::move(other.connection_)),
      state_(std::move(other.state_)),
      id_(other.id_),
      finished_(other.finished_) {
  other.finished_ = true;
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    abandon();
    connection_ = std::move(other.connection_);
    state_ = std::move(other.state_);
    id_ = other.id_;
    finished_ = other.finished_;
    other.finished_ = true;
  }
  return *this;
}

Stream::~Stream() {
  abandon();
}

void Stream::abandon() noexcept {
  if (!connection_ || finished_) return;
  finished_ = true;
  // Nobody will read the rest: stop the work and drop what still arrives.
  (void)connection_->send(protocol::encode(protocol::Cancel{id_}));
  connection_->remove_request(id_);
}

Expected<std::optional<Event>> Stream::next() {
  if (!state_) return std::optional<Event>{};
  std::unique_lock lock(state_->mutex);
  if (finished_) {
    if (state_->error) return *state_->error;
    return std::optional<Event>{};
  }
  auto ready = [this] { return !state_->events.empty() || state_->error.has_value(); };
  const auto timeout = connection_->options().read_timeout;
  if (timeout.count() > 0) {
    if (!state_->ready.wait_for(lock, timeout, ready)) {
      return make_error(Errc::kTimeout, "request {}: no event within {} ms", id_, timeout.count());
    }
  } else {
    state_->ready.wait(lock, ready);
  }
  if (!state_->events.empty()) {
    Event event = std::move(state_->events.front());
    state_->events.pop_front();
    if (std::holds_alternative<Done>(event)) finished_ = true;
    return std::optional<Event>(std::move(event));
  }
  finished_ = true;
  return *state_->error;
}

Status Stream::cancel() {
  if (finished_ || !connection_) return ok();
  return connection_->send(protocol::encode(protocol::Cancel{id_}));
}

}  // namespace ringserve
