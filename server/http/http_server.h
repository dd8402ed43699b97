// The OpenAI-compatible HTTP/1.1 endpoint (Boost.Beast), inside
// `ringserve serve --http HOST:PORT`. It uses the same Dispatcher (scheduler
// and engine) as the socket and the shared-memory ring.
//
// Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
// GET /health (503 while loading, 200 when ready), GET /metrics.
//
// The listener starts before the model is loaded so /health can say
// "loading"; set_backend() switches it to serving.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "http/metrics.h"
#include "http/options.h"
#include "scheduler/request.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::http {

class HttpSession;

// Shared by the listener and its sessions (all on one io_context).
struct HttpContext {
  HttpOptions options;
  std::atomic<serve::Dispatcher*> dispatcher{nullptr};
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer;  // set before dispatcher
  std::string model_name;                                 // set before dispatcher

  std::atomic<uint64_t> connections{0};
  // Sessions with a request whose response is not yet fully written.
  std::atomic<int64_t> busy_sessions{0};
  std::atomic<uint64_t> requests_total{0};
  std::atomic<uint64_t> errors_total{0};
  // High bit set: never collides with the socket transport's ids.
  std::atomic<uint64_t> next_request_id{1};

  mutable std::mutex facts_mutex;
  double model_load_seconds = 0.0;
  std::string preflight_verdict = "skipped";

  ServerFacts facts() const;
  uint64_t allocate_request_id() { return (1ull << 63) | next_request_id.fetch_add(1); }
};

class HttpServer : public std::enable_shared_from_this<HttpServer> {
 public:
  // Binds and listens (errors: kInvalidArgument for a bad address,
  // kIoError when the port cannot be bound). Warns for non-loopback hosts.
  static Expected<std::shared_ptr<HttpServer>> create(boost::asio::io_context& io,
                                                      HttpOptions options);

  void start();  // begin accepting
  void stop();   // close the listener; open sessions end with their requests

  // Switch from "loading" to serving. The dispatcher must outlive stop().
  void set_backend(serve::Dispatcher* dispatcher,
                   std::shared_ptr<const tokenizer::Tokenizer> tokenizer, std::string model_name);
  void set_load_seconds(double seconds);
  void set_preflight_verdict(std::string verdict);

  uint16_t port() const { return port_; }
  // Requests received whose responses are not yet fully written (shutdown
  // waits for them before dropping idle keep-alive connections).
  int64_t busy_sessions() const { return ctx_->busy_sessions.load(); }

 private:
  HttpServer(boost::asio::io_context& io, std::shared_ptr<HttpContext> ctx);
  void do_accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<HttpContext> ctx_;
  uint16_t port_ = 0;
};

}  // namespace ringserve::http
