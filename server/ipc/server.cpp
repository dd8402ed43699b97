#include "ipc/server.h"

#include <boost/asio/post.hpp>

#include "ipc/server_context.h"
#include "ipc/session.h"
#include "util/log.h"

namespace ringserve::ipc {
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
// How long the dispatcher gets to answer cancellations, and sessions to
// flush their last events, before the server stops waiting for them.
constexpr auto kCancelWait = 2s;
constexpr auto kCloseWait = 2s;
constexpr auto kShutdownTick = 10ms;
}  // namespace

Server::Server(asio::io_context& io, ServerOptions options, serve::Dispatcher& dispatcher,
               std::shared_ptr<const tokenizer::Tokenizer> tokenizer)
    : io_(io),
      strand_(asio::make_strand(io)),
      ctx_(std::make_shared<ServerContext>(std::move(options), dispatcher, std::move(tokenizer))),
      acceptor_(strand_),
      shutdown_timer_(strand_) {
  ctx_->log = log::get("ipc");
}

Server::~Server() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  if (socket_file_) socket_file_->remove();
}

const std::string& Server::socket_path() const {
  return ctx_->options.socket_path;
}

Status Server::start() {
  RS_TRY_STATUS(validate(ctx_->options));
  auto file = RS_TRY(SocketFile::create(ctx_->options.socket_path, ctx_->options.socket_mode,
                                        /*backlog=*/128));
  boost::system::error_code ec;
  acceptor_.assign(asio::local::stream_protocol(), file.release_fd(), ec);
  if (ec) {
    return make_error(Errc::kIoError, "listening on {}: {}", ctx_->options.socket_path,
                      ec.message());
  }
  socket_file_.emplace(std::move(file));
  accepting_ = true;
  ctx_->log->info("listening on {} (mode {:04o}, up to {} sessions)", ctx_->options.socket_path,
                  ctx_->options.socket_mode, ctx_->options.max_sessions);
  asio::post(strand_, [this] { accept_next(); });
  return ok();
}

void Server::accept_next() {
  if (!accepting_) return;
  acceptor_.async_accept(
      asio::make_strand(io_),
      [this](const boost::system::error_code& ec, asio::local::stream_protocol::socket socket) {
        if (ec) {
          if (ec == asio::error::operation_aborted || !accepting_) return;
          // EMFILE and friends: log, keep serving the clients we have.
          ctx_->log->error("accept on {}: {}", ctx_->options.socket_path, ec.message());
          accept_next();
          return;
        }
        const uint64_t id = next_session_id_++;
        auto session = std::make_shared<Session>(
            std::move(socket), id, ctx_, [this](uint64_t closed) { on_session_closed(closed); });
        bool full = false;
        {
          std::lock_guard lock(sessions_mutex_);
          full = sessions_.size() >= ctx_->options.max_sessions;
          if (!full) {
            sessions_.emplace(id, session);
            ctx_->sessions.store(static_cast<uint32_t>(sessions_.size()));
          }
        }
        if (full) {
          session->reject(make_error(Errc::kResourceExhausted,
                                     "server has {} sessions, its limit (--max-sessions)",
                                     ctx_->options.max_sessions));
        } else {
          session->start();
        }
        accept_next();
      });
}

void Server::on_session_closed(uint64_t id) {
  std::lock_guard lock(sessions_mutex_);
  sessions_.erase(id);
  ctx_->sessions.store(static_cast<uint32_t>(sessions_.size()));
}

size_t Server::session_count() const {
  std::lock_guard lock(sessions_mutex_);
  return sessions_.size();
}

void Server::stop_accepting() {
  asio::post(strand_, [this] { stop_accepting_on_strand(); });
}

void Server::stop_accepting_on_strand() {
  if (!accepting_ && !socket_file_) return;
  accepting_ = false;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  if (socket_file_) {
    socket_file_->remove();
    ctx_->log->info("stopped accepting; removed {}", ctx_->options.socket_path);
  }
}

template <class F>
void Server::for_each_session(F&& f) {
  std::vector<std::shared_ptr<Session>> snapshot;
  {
    std::lock_guard lock(sessions_mutex_);
    for (auto& [id, s] : sessions_) snapshot.push_back(s);
  }
  for (auto& s : snapshot) f(*s);
}

void Server::shutdown(std::chrono::milliseconds grace, std::function<void()> on_complete) {
  asio::post(strand_, [this, grace, on_complete = std::move(on_complete)]() mutable {
    if (stop_ != Stop::kRunning) {
      // A second signal: keep the first shutdown's schedule, but shorten it.
      phase_deadline_ = std::min(phase_deadline_, Clock::now());
      return;
    }
    stop_accepting_on_strand();
    on_shutdown_complete_ = std::move(on_complete);
    ctx_->log->info("shutting down: {} requests in flight, grace {} ms", ctx_->inflight.load(),
                    grace.count());
    for_each_session([](Session& s) { s.drain(); });
    stop_ = Stop::kDraining;
    phase_deadline_ = Clock::now() + grace;
    shutdown_tick();
  });
}

void Server::shutdown_tick() {
  const auto now = Clock::now();
  const bool idle = ctx_->inflight.load() <= 0;
  switch (stop_) {
    case Stop::kRunning:
    case Stop::kDone:
      return;
    case Stop::kDraining:
      if (idle) {
        for_each_session([](Session& s) { s.finish(); });
        stop_ = Stop::kClosing;
        phase_deadline_ = now + kCloseWait;
      } else if (now >= phase_deadline_) {
        ctx_->log->info("grace period over: cancelling {} requests", ctx_->inflight.load());
        for_each_session([](Session& s) { s.cancel_all(); });
        stop_ = Stop::kCancelling;
        phase_deadline_ = now + kCancelWait;
      }
      break;
    case Stop::kCancelling:
      if (idle || now >= phase_deadline_) {
        for_each_session([](Session& s) { s.finish(); });
        stop_ = Stop::kClosing;
        phase_deadline_ = now + kCloseWait;
      }
      break;
    case Stop::kClosing:
      if (session_count() == 0 || now >= phase_deadline_) {
        for_each_session([](Session& s) { s.terminate(); });
        stop_ = Stop::kDone;
        ctx_->log->info("shutdown complete");
        if (on_shutdown_complete_) asio::post(io_, std::move(on_shutdown_complete_));
        return;
      }
      break;
  }
  shutdown_timer_.expires_after(kShutdownTick);
  shutdown_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) shutdown_tick();
  });
}

}  // namespace ringserve::ipc
