// One HTTP connection. Everything runs on the connection's strand; the
// engine thread reaches it only through GenerationSink, which posts.
//
// Exactly one write is in flight at a time (a queue of whole byte strings),
// one read at a time. While a generation runs, a watch read stays pending so
// a client that disconnects is noticed at once and its sequence cancelled
// (freed within one engine step), streaming or not.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "http/http_server.h"
#include "http/openai_error.h"
#include "http/openai_request.h"
#include "http/openai_response.h"

namespace ringserve::http {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<HttpContext> ctx);
  ~HttpSession();

  void run();
  // Answer 503 and close (the connection limit was reached).
  void reject();

  // From GenerationSink, on the strand.
  void on_tokens(serve::TokenDelta delta);
  void on_done(serve::Completion done);

 private:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  struct Generation {
    uint64_t id = 0;
    std::unique_ptr<ApiCall> call;
    std::unique_ptr<ResponseBuilder> builder;
    bool headers_sent = false;
  };

  void do_read();
  void on_read(boost::beast::error_code ec, size_t bytes);
  void handle(Request request);
  void start_generation(Endpoint endpoint, const Request& request);

  void send_response(int status, std::string content_type, std::string body,
                     std::vector<std::pair<std::string, std::string>> extra_headers = {});
  void send_error(const ApiError& error);
  void send_chunk(const std::string& data);

  void queue_write(std::string bytes);
  void do_write();
  void on_write(boost::beast::error_code ec, size_t bytes);
  void maybe_continue();

  void start_watch();
  void on_watch(boost::beast::error_code ec, size_t bytes);
  void close();
  void drain();
  void set_busy(bool busy);

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer idle_timer_;
  std::shared_ptr<HttpContext> ctx_;

  std::deque<std::string> out_;
  size_t out_bytes_ = 0;
  bool writing_ = false;
  bool response_complete_ = false;  // the current response is fully queued
  bool keep_alive_ = true;
  bool watch_pending_ = false;
  bool closed_ = false;
  bool counted_ = false;
  bool busy_ = false;  // counted in HttpContext::busy_sessions
  std::optional<Generation> generation_;
};

}  // namespace ringserve::http
