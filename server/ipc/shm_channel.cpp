#include "ipc/shm_channel.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringserve::ipc {
namespace asio = boost::asio;

namespace {

Expected<int> dup_fd(int fd) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return make_error(Errc::kIoError, "dup doorbell: {}", std::strerror(errno));
  return copy;
}

}  // namespace

Expected<std::unique_ptr<ShmChannel>> ShmChannel::create(const Executor& executor,
                                                         const protocol::SegmentOptions& options) {
  auto segment = RS_TRY(protocol::ShmSegment::create(options));
  std::unique_ptr<ShmChannel> channel(new ShmChannel(executor, std::move(segment)));
  channel->requests_ = RS_TRY(channel->segment_.request_reader());
  channel->events_ = RS_TRY(channel->segment_.event_writer());
  channel->request_bell_.assign(RS_TRY(dup_fd(channel->requests_.wait_fd())));
  channel->space_bell_.assign(RS_TRY(dup_fd(channel->events_.wait_fd())));
  return channel;
}

ShmChannel::ShmChannel(const Executor& executor, protocol::ShmSegment segment)
    : segment_(std::move(segment)), request_bell_(executor), space_bell_(executor) {}

ShmChannel::~ShmChannel() {
  close();
}

void ShmChannel::close() {
  if (closed_) return;
  closed_ = true;
  alive_.reset();
  boost::system::error_code ignored;
  request_bell_.close(ignored);
  space_bell_.close(ignored);
  pending_.clear();
  pending_bytes_ = 0;
}

void ShmChannel::start(RecordHandler on_record) {
  on_record_ = std::move(on_record);
  drain_requests();
}

void ShmChannel::set_paused(bool paused) {
  if (paused_ == paused) return;
  paused_ = paused;
  if (!paused_) drain_requests();
}

void ShmChannel::drain_requests() {
  // Reentrancy: on_record_ may pause us, close us or send events.
  while (!closed_ && !failed_ && !paused_ && !waiting_requests_) {
    auto got = requests_.try_read(record_);
    if (!got) {
      failed_ = true;
      on_record_(std::move(got).error());
      return;
    }
    if (*got) {
      on_record_(std::move(record_));
      record_ = {};
      continue;
    }
    // Announce the sleep, then look once more: a record published between
    // our empty read and the announcement would otherwise ring nobody.
    if (requests_.prepare_wait()) {
      requests_.finish_wait();
      continue;
    }
    wait_for_requests();
    return;
  }
}

void ShmChannel::wait_for_requests() {
  waiting_requests_ = true;
  request_bell_.async_wait(
      asio::posix::stream_descriptor::wait_read,
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (alive.expired() || ec) return;
        waiting_requests_ = false;
        requests_.finish_wait();
        drain_requests();
      });
}

Status ShmChannel::send(protocol::Frame frame) {
  if (closed_) return make_error(Errc::kUnavailable, "shared-memory channel closed");
  if (frame.payload().size() > events_.max_payload()) {
    return make_error(Errc::kTooLarge, "event of {} bytes exceeds the event ring's {} byte limit",
                      frame.payload().size(), events_.max_payload());
  }
  pending_bytes_ += frame.payload().size();
  pending_.push_back(std::move(frame));
  if (!waiting_space_) flush_events();
  return ok();
}

void ShmChannel::flush_events() {
  bool wrote = false;
  while (!closed_ && !pending_.empty()) {
    auto written = events_.try_write(pending_.front().payload());
    if (!written) {
      // The client corrupted its tail: the ring is unusable. The socket
      // (liveness) tells the session; pending events are dropped with it.
      failed_ = true;
      pending_.clear();
      pending_bytes_ = 0;
      if (on_record_) on_record_(std::move(written).error());
      return;
    }
    if (*written) {
      pending_bytes_ -= pending_.front().payload().size();
      pending_.pop_front();
      wrote = true;
      continue;
    }
    if (events_.prepare_wait(pending_.front().payload().size())) {
      events_.finish_wait();
      continue;
    }
    wait_for_space();
    break;
  }
  if (wrote && pending_.empty() && on_drained_) on_drained_();
}

void ShmChannel::wait_for_space() {
  waiting_space_ = true;
  space_bell_.async_wait(
      asio::posix::stream_descriptor::wait_read,
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (alive.expired() || ec) return;
        waiting_space_ = false;
        events_.finish_wait();
        flush_events();
      });
}

}  // namespace ringserve::ipc
