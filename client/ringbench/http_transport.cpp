#include "http_transport.h"

#include <charconv>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "workload.h"

namespace ringbench {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using ringserve::Errc;
using ringserve::make_error;
using SteadyClock = std::chrono::steady_clock;
using tcp = net::ip::tcp;

ringserve::Expected<HttpTarget> parse_http_target(const std::string& text) {
  std::string rest = text;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  if (const size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) {
    return make_error(Errc::kInvalidArgument, "--http '{}': expected HOST:PORT", text);
  }
  HttpTarget target;
  target.host = rest.substr(0, colon);
  if (target.host.size() >= 2 && target.host.front() == '[' && target.host.back() == ']') {
    target.host = target.host.substr(1, target.host.size() - 2);
  }
  if (target.host.empty() || target.host == "localhost") target.host = "127.0.0.1";
  unsigned port = 0;
  const char* begin = rest.data() + colon + 1;
  const char* end = rest.data() + rest.size();
  auto [ptr, ec] = std::from_chars(begin, end, port);
  if (ec != std::errc() || ptr != end || port == 0 || port > 65535) {
    return make_error(Errc::kInvalidArgument, "--http '{}': bad port", text);
  }
  target.port = static_cast<uint16_t>(port);
  return target;
}

struct HttpConnection::Impl {
  HttpTarget target;
  net::io_context io;
  tcp::socket socket{io};
  boost::beast::flat_buffer buffer;

  ringserve::Status open() {
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(target.host, std::to_string(target.port), ec);
    if (!ec) net::connect(socket, endpoints, ec);
    if (ec) {
      return make_error(Errc::kUnavailable, "HTTP connect {}:{}: {}", target.host, target.port,
                        ec.message());
    }
    socket.set_option(tcp::no_delay(true), ec);
    buffer.clear();
    return ringserve::ok();
  }
  void close() {
    boost::system::error_code ec;
    socket.close(ec);
  }
  // Opens the connection unless a usable one is open. A keep-alive
  // connection that the server closed (its idle timeout) reads EOF at once.
  ringserve::Status ensure_open() {
    if (socket.is_open()) {
      boost::system::error_code ec, ignored;
      char byte = 0;
      socket.non_blocking(true, ignored);
      socket.read_some(net::buffer(&byte, 1), ec);
      socket.non_blocking(false, ignored);
      if (ec == net::error::would_block) return ringserve::ok();
      close();
    }
    return open();
  }
};

HttpConnection::HttpConnection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpConnection::~HttpConnection() = default;

ringserve::Expected<std::unique_ptr<HttpConnection>> HttpConnection::connect(
    const HttpTarget& target) {
  auto impl = std::make_unique<Impl>();
  impl->target = target;
  RS_TRY_STATUS(impl->open());
  return std::unique_ptr<HttpConnection>(new HttpConnection(std::move(impl)));
}

RequestRecord HttpConnection::run(const std::vector<int32_t>& prompt, const Config& config,
                                  uint64_t seed, SteadyClock::time_point phase_start) {
  RequestRecord record;
  Impl& c = *impl_;
  if (auto opened = c.ensure_open(); !opened) {
    record.error = opened.error().to_string();
    return record;
  }
  bhttp::request<bhttp::string_body> request{bhttp::verb::post, "/v1/completions", 11};
  request.set(bhttp::field::host, c.target.host);
  request.set(bhttp::field::content_type, "application/json");
  request.set(bhttp::field::accept, "text/event-stream");
  request.keep_alive(true);
  request.body() = completion_request_body(prompt, config, seed, c.target.model);
  request.prepare_payload();

  const SteadyClock::time_point sent = SteadyClock::now();
  record.start_s = std::chrono::duration<double>(sent - phase_start).count();
  boost::system::error_code ec;
  bhttp::write(c.socket, request, ec);
  if (ec) {
    c.close();
    record.error = fmt::format("HTTP write: {}", ec.message());
    return record;
  }

  CompletionStreamReader reader(record, sent);
  // Chunk bodies arrive here as they are read; events are timed on arrival.
  auto on_chunk = [&](uint64_t, boost::beast::string_view body,
                      boost::system::error_code&) -> size_t {
    reader.feed(std::string_view(body.data(), body.size()), SteadyClock::now());
    return body.size();
  };
  bhttp::response_parser<bhttp::string_body> parser;
  // No limit (a stream is as long as it is). Not boost::none: Boost 1.74
  // compares lengths against it as if it were a limit of 0.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.on_chunk_body(on_chunk);
  bhttp::read_header(c.socket, c.buffer, parser, ec);
  if (!ec && parser.get().result_int() != 200) {
    bhttp::read(c.socket, c.buffer, parser, ec);
    record.error = fmt::format("HTTP {}: {}", parser.get().result_int(), parser.get().body());
    c.close();
    return record;
  }
  // A stream that is not chunked (read to the connection's end) lands in
  // the body: its new bytes are fed after each read.
  size_t fed = 0;
  while (!ec && !parser.is_done()) {
    bhttp::read_some(c.socket, c.buffer, parser, ec);
    const std::string& body = parser.get().body();
    if (!parser.chunked() && body.size() > fed) {
      reader.feed(std::string_view(body).substr(fed), SteadyClock::now());
      fed = body.size();
    }
  }
  if (ec) {
    c.close();
    record.error = fmt::format("HTTP read: {}", ec.message());
    return record;
  }
  if (!parser.keep_alive()) c.close();
  record.e2e_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - sent).count();
  reader.finish(config.output_len);
  return record;
}

ringserve::Expected<std::string> HttpConnection::get(const std::string& path) {
  Impl& c = *impl_;
  RS_TRY_STATUS(c.ensure_open());
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, path, 11};
  request.set(bhttp::field::host, c.target.host);
  request.keep_alive(true);
  boost::system::error_code ec;
  bhttp::write(c.socket, request, ec);
  bhttp::response<bhttp::string_body> response;
  if (!ec) bhttp::read(c.socket, c.buffer, response, ec);
  if (ec) {
    c.close();
    return make_error(Errc::kIoError, "GET {}: {}", path, ec.message());
  }
  if (!response.keep_alive()) c.close();
  if (response.result_int() != 200) {
    return make_error(Errc::kUnavailable, "GET {}: HTTP {}", path, response.result_int());
  }
  return std::move(response.body());
}

ringserve::Expected<std::chrono::nanoseconds> HttpConnection::health_round_trip() {
  Impl& c = *impl_;
  RS_TRY_STATUS(c.ensure_open());
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/health", 11};
  request.set(bhttp::field::host, c.target.host);
  request.keep_alive(true);
  const SteadyClock::time_point start = SteadyClock::now();
  boost::system::error_code ec;
  bhttp::write(c.socket, request, ec);
  bhttp::response<bhttp::string_body> response;
  if (!ec) bhttp::read(c.socket, c.buffer, response, ec);
  const auto elapsed = SteadyClock::now() - start;
  if (ec) {
    c.close();
    return make_error(Errc::kIoError, "GET /health: {}", ec.message());
  }
  if (!response.keep_alive()) c.close();
  if (response.result_int() != 200) {
    return make_error(Errc::kUnavailable, "GET /health: {}", response.result_int());
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed);
}

}  // namespace ringbench
