#include "http/http_server.h"

#include <boost/asio/strand.hpp>

#include "http/http_session.h"
#include "util/log.h"

namespace ringserve::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

ServerFacts HttpContext::facts() const {
  ServerFacts f;
  f.ready = dispatcher.load(std::memory_order_acquire) != nullptr;
  f.http_connections = connections.load();
  f.http_requests_total = requests_total.load();
  f.http_errors_total = errors_total.load();
  std::lock_guard lock(facts_mutex);
  f.model_load_seconds = model_load_seconds;
  f.preflight_verdict = preflight_verdict;
  f.model_name = model_name;
  return f;
}

HttpServer::HttpServer(net::io_context& io, std::shared_ptr<HttpContext> ctx)
    : io_(io), acceptor_(net::make_strand(io)), ctx_(std::move(ctx)) {}

Expected<std::shared_ptr<HttpServer>> HttpServer::create(net::io_context& io, HttpOptions options) {
  auto log = log::get("http");
  ListenAddress address = RS_TRY(parse_listen_address(options.listen));
  boost::system::error_code ec;
  const net::ip::address ip = net::ip::make_address(address.host, ec);
  if (ec) {
    return make_error(Errc::kInvalidArgument, "--http '{}': '{}' is not an IP address",
                      options.listen, address.host);
  }
  if (!ip.is_loopback()) {
    log->warn(
        "HTTP API on non-loopback address {}: anyone who can reach it can use the model; "
        "there is no authentication",
        options.listen);
  }
  auto ctx = std::make_shared<HttpContext>();
  ctx->options = std::move(options);
  std::shared_ptr<HttpServer> server(new HttpServer(io, ctx));
  const tcp::endpoint endpoint(ip, address.port);
  auto fail = [&](const char* what) {
    return make_error(Errc::kIoError, "HTTP {} {}: {}", what, ctx->options.listen, ec.message());
  };
  server->acceptor_.open(endpoint.protocol(), ec);
  if (ec) return fail("open");
  server->acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  server->acceptor_.bind(endpoint, ec);
  if (ec) return fail("bind");
  server->acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  server->port_ = server->acceptor_.local_endpoint().port();
  log->info("HTTP API listening on {}:{}", address.host, server->port_);
  return server;
}

void HttpServer::start() {
  net::dispatch(acceptor_.get_executor(), [self = shared_from_this()] { self->do_accept(); });
}

void HttpServer::stop() {
  net::dispatch(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ec;
    self->acceptor_.close(ec);
  });
}

void HttpServer::do_accept() {
  acceptor_.async_accept(
      net::make_strand(io_),
      [self = shared_from_this()](boost::system::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !self->acceptor_.is_open()) return;
        if (ec) {
          log::get("http")->warn("accept: {}", ec.message());
        } else {
          auto session = std::make_shared<HttpSession>(std::move(socket), self->ctx_);
          if (self->ctx_->connections.load() > self->ctx_->options.max_connections) {
            session->reject();
          } else {
            session->run();
          }
        }
        self->do_accept();
      });
}

void HttpServer::set_backend(serve::Dispatcher* dispatcher,
                             std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                             std::string model_name) {
  {
    std::lock_guard lock(ctx_->facts_mutex);
    ctx_->tokenizer = std::move(tokenizer);
    ctx_->model_name =
        ctx_->options.model_name.empty() ? std::move(model_name) : ctx_->options.model_name;
  }
  ctx_->dispatcher.store(dispatcher, std::memory_order_release);
}

void HttpServer::set_load_seconds(double seconds) {
  std::lock_guard lock(ctx_->facts_mutex);
  ctx_->model_load_seconds = seconds;
}

void HttpServer::set_preflight_verdict(std::string verdict) {
  std::lock_guard lock(ctx_->facts_mutex);
  ctx_->preflight_verdict = std::move(verdict);
}

}  // namespace ringserve::http
