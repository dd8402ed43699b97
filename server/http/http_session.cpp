#include "http/http_session.h"

#include <array>
#include <chrono>

#include <fmt/format.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "http/metrics.h"
#include "util/log.h"

namespace ringserve::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;

namespace {

// Delivers a request's events to its session's strand. Holding the session
// keeps it alive until on_done, which the dispatcher sends exactly once.
class GenerationSink final : public serve::RequestSink {
 public:
  explicit GenerationSink(std::shared_ptr<HttpSession> session, net::any_io_executor executor)
      : session_(std::move(session)), executor_(std::move(executor)) {}

  void on_tokens(serve::TokenDelta delta) override {
    net::post(executor_,
              [s = session_, d = std::move(delta)]() mutable { s->on_tokens(std::move(d)); });
  }
  void on_done(serve::Completion done) override {
    net::post(executor_, [s = std::move(session_), d = std::move(done)]() mutable {
      s->on_done(std::move(d));
    });
  }

 private:
  std::shared_ptr<HttpSession> session_;
  net::any_io_executor executor_;
};

const char* reason_phrase(int status) {
  return bhttp::obsolete_reason(static_cast<bhttp::status>(status)).data();
}

std::string target_path(beast::string_view target) {
  std::string path(target);
  if (auto q = path.find('?'); q != std::string::npos) path.resize(q);
  return path;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

HttpSession::HttpSession(net::ip::tcp::socket socket, std::shared_ptr<HttpContext> ctx)
    : stream_(std::move(socket)), idle_timer_(stream_.get_executor()), ctx_(std::move(ctx)) {
  ctx_->connections.fetch_add(1);
  counted_ = true;
  // Each SSE chunk is a small write: without TCP_NODELAY, Nagle holds the
  // first token behind the headers until the client's delayed ACK (~40 ms).
  beast::error_code ec;
  stream_.socket().set_option(net::ip::tcp::no_delay(true), ec);
}

HttpSession::~HttpSession() {
  if (counted_) ctx_->connections.fetch_sub(1);
  set_busy(false);
}

void HttpSession::set_busy(bool busy) {
  if (busy == busy_) return;
  busy_ = busy;
  ctx_->busy_sessions.fetch_add(busy ? 1 : -1);
}

void HttpSession::run() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
}

void HttpSession::reject() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    self->keep_alive_ = false;
    self->send_error(ApiError{503,
                              "server_error",
                              "too_many_connections",
                              "too many open HTTP connections; retry shortly",
                              {}});
  });
}

void HttpSession::do_read() {
  if (closed_) return;
  parser_.emplace();
  parser_->header_limit(ctx_->options.header_limit_bytes);
  parser_->body_limit(ctx_->options.body_limit_bytes);
  stream_.expires_after(ctx_->options.read_timeout);
  bhttp::async_read(stream_, buffer_, *parser_,
                    beast::bind_front_handler(&HttpSession::on_read, shared_from_this()));
}

void HttpSession::on_read(beast::error_code ec, size_t) {
  if (closed_) return;
  if (ec == bhttp::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::connection_reset || ec == beast::error::timeout) {
    close();
    return;
  }
  keep_alive_ = false;  // after a malformed request we cannot find the next one
  if (ec == bhttp::error::body_limit) {
    send_error(
        ApiError{413,
                 "invalid_request_error",
                 "request_too_large",
                 fmt::format("request body exceeds {} bytes", ctx_->options.body_limit_bytes),
                 {}});
    return;
  }
  if (ec == bhttp::error::header_limit) {
    send_error(
        ApiError{431,
                 "invalid_request_error",
                 "headers_too_large",
                 fmt::format("request headers exceed {} bytes", ctx_->options.header_limit_bytes),
                 {}});
    return;
  }
  if (ec) {
    send_error(invalid_request(fmt::format("malformed HTTP request: {}", ec.message())));
    return;
  }
  stream_.expires_never();
  Request request = parser_->release();
  keep_alive_ = request.keep_alive();
  handle(std::move(request));
}

void HttpSession::handle(Request request) {
  ctx_->requests_total.fetch_add(1);
  set_busy(true);
  const std::string path = target_path(request.target());
  const bool get = request.method() == bhttp::verb::get;
  const bool post = request.method() == bhttp::verb::post;
  serve::Dispatcher* dispatcher = ctx_->dispatcher.load(std::memory_order_acquire);

  if (path == "/health") {
    if (!get)
      return send_error(
          ApiError{405, "invalid_request_error", "method_not_allowed", "use GET", {}});
    if (!dispatcher) return send_response(503, "application/json", R"({"status":"loading"})");
    return send_response(200, "application/json", R"({"status":"ok"})");
  }
  if (path == "/metrics") {
    if (!get)
      return send_error(
          ApiError{405, "invalid_request_error", "method_not_allowed", "use GET", {}});
    std::optional<serve::StatsSnapshot> stats;
    if (dispatcher) stats = dispatcher->stats();
    return send_response(200, "text/plain; version=0.0.4; charset=utf-8",
                         render_metrics(stats ? &*stats : nullptr, ctx_->facts()));
  }
  if (path == "/v1/models") {
    if (!get)
      return send_error(
          ApiError{405, "invalid_request_error", "method_not_allowed", "use GET", {}});
    if (!dispatcher)
      return send_error(ApiError{503, "server_error", "loading", "the model is loading", {}});
    const ServerFacts facts = ctx_->facts();
    nlohmann::json body = {
        {"object", "list"},
        {"data",
         nlohmann::json::array({{{"id", facts.model_name},
                                 {"object", "model"},
                                 {"created", 0},
                                 {"owned_by", "ringserve"},
                                 {"max_model_len", dispatcher->engine_info().max_context}}})}};
    return send_response(200, "application/json", body.dump());
  }
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (!post)
      return send_error(
          ApiError{405, "invalid_request_error", "method_not_allowed", "use POST", {}});
    if (!dispatcher)
      return send_error(ApiError{503, "server_error", "loading", "the model is loading", {}});
    return start_generation(
        path == "/v1/chat/completions" ? Endpoint::kChat : Endpoint::kCompletions, request);
  }
  send_error(ApiError{404,
                      "invalid_request_error",
                      "not_found",
                      fmt::format("no route for {} {}", std::string(request.method_string()), path),
                      {}});
}

void HttpSession::start_generation(Endpoint endpoint, const Request& request) {
  serve::Dispatcher* dispatcher = ctx_->dispatcher.load(std::memory_order_acquire);
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
  std::string model;
  {
    std::lock_guard lock(ctx_->facts_mutex);
    tokenizer = ctx_->tokenizer;
    model = ctx_->model_name;
  }
  ParseContext context{tokenizer.get(), &dispatcher->engine_info(),
                       ctx_->options.default_max_tokens, ctx_->options.max_prompt_tokens};
  Expected<ApiCall> parsed = parse_api_call(endpoint, request.body(), context);
  if (!parsed) return send_error(to_api_error(parsed.error()));

  Generation g;
  g.id = ctx_->allocate_request_id();
  g.call = std::make_unique<ApiCall>(std::move(parsed).value());
  g.call->request.id = g.id;
  g.call->request.log_id = fmt::format("http:{:x}", g.id & ~(1ull << 63));
  g.builder = std::make_unique<ResponseBuilder>(*g.call, model, g.id & ~(1ull << 63), unix_now(),
                                                tokenizer.get());
  serve::Request copy = g.call->request;
  const bool stream = g.call->stream;
  generation_ = std::move(g);

  auto sink = std::make_shared<GenerationSink>(shared_from_this(), stream_.get_executor());
  if (Status submitted = dispatcher->submit(std::move(copy), sink); !submitted) {
    generation_.reset();
    ApiError error = to_api_error(submitted.error());
    if (error.status == 429) {
      return send_response(429, "application/json", to_json(error), {{"Retry-After", "1"}});
    }
    return send_error(error);
  }
  log::get("http")->debug("req={} {} prompt_tokens={} stream={}", generation_->call->request.log_id,
                          std::string(request.target()), generation_->call->request.prompt.size(),
                          stream);
  if (stream) {
    generation_->headers_sent = true;
    queue_write(fmt::format(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        "Transfer-Encoding: chunked\r\nConnection: {}\r\n\r\n",
        keep_alive_ ? "keep-alive" : "close"));
    send_chunk(generation_->builder->stream_start());
  }
  start_watch();
}

void HttpSession::on_tokens(serve::TokenDelta delta) {
  if (!generation_ || generation_->id != delta.id || closed_) return;
  if (generation_->call->stream) {
    send_chunk(generation_->builder->stream_delta(delta));
    if (out_bytes_ > ctx_->options.max_pending_write_bytes) {
      log::get("http")->warn("req={} client reads too slowly ({} bytes unsent): cancelling",
                             generation_->call->request.log_id, out_bytes_);
      if (auto* d = ctx_->dispatcher.load()) d->cancel(generation_->id);
      keep_alive_ = false;
    }
  } else {
    generation_->builder->collect(delta);
  }
}

void HttpSession::on_done(serve::Completion done) {
  if (!generation_ || generation_->id != done.id) return;
  auto log = log::get("http");
  log->debug("req={} done reason={} completion_tokens={}", generation_->call->request.log_id,
             serve::finish_reason_name(done.reason), done.completion_tokens);
  if (closed_) {
    generation_.reset();
    return;
  }
  ResponseBuilder& builder = *generation_->builder;
  if (generation_->call->stream) {
    if (done.reason == serve::FinishReason::kError) {
      send_chunk(builder.stream_error(done.error));
    } else {
      send_chunk(builder.stream_end(done));
    }
    queue_write("0\r\n\r\n");
    generation_.reset();
    response_complete_ = true;
    maybe_continue();
    return;
  }
  const bool error = done.reason == serve::FinishReason::kError;
  const bool cancelled = done.reason == serve::FinishReason::kCancelled;
  std::string body = error || cancelled ? std::string() : builder.body(done);
  generation_.reset();
  if (error) return send_error(to_api_error(done.error));
  if (cancelled) {
    return send_error(ApiError{
        503, "server_error", "cancelled", "the request was cancelled (server shutting down)", {}});
  }
  send_response(200, "application/json", std::move(body));
}

void HttpSession::send_response(int status, std::string content_type, std::string body,
                                std::vector<std::pair<std::string, std::string>> extra_headers) {
  if (status >= 400) ctx_->errors_total.fetch_add(1);
  std::string head = fmt::format(
      "HTTP/1.1 {} {}\r\nServer: ringserve\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
      "Connection: {}\r\n",
      status, reason_phrase(status), content_type, body.size(),
      keep_alive_ ? "keep-alive" : "close");
  for (const auto& [name, value] : extra_headers) head += fmt::format("{}: {}\r\n", name, value);
  head += "\r\n";
  queue_write(std::move(head) + body);
  response_complete_ = true;
  maybe_continue();
}

void HttpSession::send_error(const ApiError& error) {
  log::get("http")->debug("answering {} {}: {}", error.status, error.code, error.message);
  std::vector<std::pair<std::string, std::string>> headers;
  if (error.status == 429 || error.status == 503) headers.emplace_back("Retry-After", "1");
  send_response(error.status, "application/json", to_json(error), std::move(headers));
}

void HttpSession::send_chunk(const std::string& data) {
  if (data.empty()) return;
  queue_write(fmt::format("{:x}\r\n{}\r\n", data.size(), data));
}

void HttpSession::queue_write(std::string bytes) {
  if (closed_) return;
  out_bytes_ += bytes.size();
  out_.push_back(std::move(bytes));
  if (!writing_) do_write();
}

void HttpSession::do_write() {
  writing_ = true;
  net::async_write(stream_, net::buffer(out_.front()),
                   beast::bind_front_handler(&HttpSession::on_write, shared_from_this()));
}

void HttpSession::on_write(beast::error_code ec, size_t) {
  writing_ = false;
  if (ec) {
    // The peer is gone: stop its generation; on_done still arrives and is dropped.
    close();
    stream_.close();
    return;
  }
  out_bytes_ -= out_.front().size();
  out_.pop_front();
  if (!out_.empty()) return do_write();
  maybe_continue();
}

// Called whenever something that gates the next request finished: the
// response was fully queued, the write queue drained, or the watch read ended.
void HttpSession::maybe_continue() {
  if (closed_ || !response_complete_ || writing_ || !out_.empty() || generation_) return;
  set_busy(false);  // the response is written
  if (!keep_alive_) return close();
  if (watch_pending_) {
    // The next request is already being read by the watch; give it the
    // keep-alive idle time, then hang up.
    idle_timer_.expires_after(ctx_->options.read_timeout);
    idle_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec && self->watch_pending_ && !self->generation_) self->close();
    });
    return;
  }
  response_complete_ = false;
  do_read();
}

void HttpSession::start_watch() {
  if (watch_pending_ || closed_) return;
  // Pipelined bytes are kept for the next request, within the request limits.
  if (buffer_.size() > ctx_->options.header_limit_bytes + ctx_->options.body_limit_bytes) {
    keep_alive_ = false;
    if (auto* d = ctx_->dispatcher.load(); d && generation_) d->cancel(generation_->id);
    return;
  }
  watch_pending_ = true;
  stream_.async_read_some(buffer_.prepare(4096),
                          beast::bind_front_handler(&HttpSession::on_watch, shared_from_this()));
}

void HttpSession::on_watch(beast::error_code ec, size_t bytes) {
  watch_pending_ = false;
  if (closed_) return;
  if (ec) {
    if (generation_) {
      log::get("http")->info("req={} client disconnected: cancelling",
                             generation_->call->request.log_id);
      if (auto* d = ctx_->dispatcher.load()) d->cancel(generation_->id);
    }
    close();
    stream_.close();
    return;
  }
  buffer_.commit(bytes);
  if (generation_) return start_watch();
  idle_timer_.cancel();
  maybe_continue();
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  set_busy(false);
  if (generation_) {
    if (auto* d = ctx_->dispatcher.load()) d->cancel(generation_->id);
  }
  idle_timer_.cancel();
  // Half-close and drain what the client still sends (say, the rest of an
  // oversized body) for a moment: closing with unread data makes the kernel
  // send a reset, which can destroy the error response before it is read.
  beast::error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  if (ec) {
    stream_.close();
    return;
  }
  stream_.expires_after(std::chrono::seconds(1));
  drain();
}

void HttpSession::drain() {
  if (watch_pending_) return;  // the watch read ends with the connection
  auto scratch = std::make_shared<std::array<char, 4096>>();
  stream_.async_read_some(net::buffer(*scratch),
                          [self = shared_from_this(), scratch](beast::error_code ec, size_t) {
                            if (ec) {
                              self->stream_.close();
                              return;
                            }
                            self->drain();
                          });
}

}  // namespace ringserve::http
