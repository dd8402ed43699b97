// Session: the socket side. Frames are [u32 LE size][Envelope]; the size is
// checked before anything is allocated, and an oversized frame is skipped
// (answered with an Error) so the connection survives it.
#include <sys/socket.h>

#include <iterator>

#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "ipc/session.h"

namespace ringserve::ipc {
namespace asio = boost::asio;

void Session::read_header() {
  if (phase_ == Phase::kClosing || phase_ == Phase::kClosed) return;
  if (read_paused_) {
    read_waiting_ = true;
    return;
  }
  asio::async_read(
      socket_, asio::buffer(header_),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
        if (ec) {
          self->close_now(ec == asio::error::eof ? "peer closed the connection" : ec.message());
          return;
        }
        auto size = protocol::parse_frame_header(self->header_, self->ctx_->limits);
        if (size) {
          self->read_body(*size);
          return;
        }
        if (size.error().code != Errc::kTooLarge) {
          self->fail(size.error());
          return;
        }
        uint32_t declared = uint32_t{self->header_[0]} | uint32_t{self->header_[1]} << 8 |
                            uint32_t{self->header_[2]} << 16 | uint32_t{self->header_[3]} << 24;
        self->ctx_->log->warn("session {}: {}", self->id_, size.error().to_string());
        self->send_event(protocol::encode_error(0, size.error()));
        self->skip_body(declared);
      });
}

void Session::read_body(uint32_t size) {
  body_.resize(size);
  asio::async_read(
      socket_, asio::buffer(body_),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
        if (ec) {
          self->close_now(ec == asio::error::eof ? "peer closed mid-frame" : ec.message());
          return;
        }
        self->on_frame(std::move(self->body_), Source::kSocket);
        self->body_ = {};
        self->read_header();
      });
}

void Session::skip_body(uint32_t remaining) {
  if (remaining == 0) {
    read_header();
    return;
  }
  constexpr uint32_t kChunk = 64 * 1024;
  body_.resize(std::min(remaining, kChunk));
  asio::async_read(
      socket_, asio::buffer(body_),
      [self = shared_from_this(), remaining](const boost::system::error_code& ec, size_t n) {
        if (ec) {
          self->close_now("peer closed while an oversized frame was skipped");
          return;
        }
        self->skip_body(remaining - static_cast<uint32_t>(n));
      });
}

void Session::write_socket(protocol::Frame frame) {
  if (phase_ == Phase::kClosed) return;
  write_queue_bytes_ += frame.as_frame().size();
  write_queue_.push_back(std::move(frame));
  if (!writing_) write_next();
  update_backpressure();
}

void Session::write_next() {
  if (write_queue_.empty()) {
    writing_ = false;
    if (close_when_flushed_ && (!shm_ || shm_->pending() == 0)) {
      close_now("closed after flushing");
    } else {
      update_backpressure();
    }
    return;
  }
  writing_ = true;
  asio::async_write(
      socket_,
      asio::buffer(write_queue_.front().as_frame().data(), write_queue_.front().as_frame().size()),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
        self->writing_ = false;
        if (self->phase_ == Phase::kClosed) {
          // Closed while this write was in flight (its completion may have
          // been queued behind the handler that closed): only now is the
          // frame it was sending no longer in use.
          self->write_queue_.clear();
          self->write_queue_bytes_ = 0;
          return;
        }
        if (ec) {
          self->close_now("write failed: " + ec.message());
          return;
        }
        self->write_queue_bytes_ -= self->write_queue_.front().as_frame().size();
        self->write_queue_.pop_front();
        self->write_next();
      });
}

void Session::close_after_flush() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosing;
  close_when_flushed_ = true;
  if (shm_) shm_->set_paused(true);
  if (!writing_ && (!shm_ || shm_->pending() == 0)) close_now("closed");
}

void Session::close_now(std::string_view why) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  size_t unfinished = by_server_.size();
  forget_all_requests();
  if (shm_) shm_->close();
  boost::system::error_code ignored;
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
  // A write in flight still reads the front frame; its handler frees it.
  if (writing_) {
    write_queue_.erase(std::next(write_queue_.begin()), write_queue_.end());
    write_queue_bytes_ = write_queue_.front().as_frame().size();
  } else {
    write_queue_.clear();
    write_queue_bytes_ = 0;
  }
  ctx_->log->info("session {} ended ({}; {} unfinished requests cancelled)", id_, why, unfinished);
  // Deferred: the server drops its reference in there, and we may be deep
  // inside one of our own handlers.
  if (on_closed_) {
    asio::post(socket_.get_executor(),
               [self = shared_from_this(), cb = std::move(on_closed_)] { cb(self->id_); });
  }
}

}  // namespace ringserve::ipc
