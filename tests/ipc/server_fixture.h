// The typed fixture shared by the server suites: an in-process ipc::Server
// over a ScriptedDispatcher on a unique socket path, and SDK clients that
// use either the socket alone or the socket plus shared-memory rings.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ipc/server.h"
#include "ringserve/client/client.h"
#include "scripted_dispatcher.h"
#include "support/test_support.h"
#include "watchdog.h"

namespace ringserve::testing {

struct SocketOnly {
  static constexpr bool kShm = false;
};
struct SocketAndShm {
  static constexpr bool kShm = true;
};
using Transports = ::testing::Types<SocketOnly, SocketAndShm>;

struct TransportName {
  template <class T>
  static std::string GetName(int) {
    return T::kShm ? "SocketAndShm" : "SocketOnly";
  }
};

template <class Transport>
class ServerTest : public ::testing::Test {
 protected:
  static constexpr bool kShm = Transport::kShm;

  ServerTest()
      : watchdog_(::testing::UnitTest::GetInstance()->current_test_info()->name(),
                  std::chrono::seconds(120)) {}

  ~ServerTest() override { stop_server(); }

  std::string socket_path() const { return (dir_.path() / "rs.sock").string(); }

  ipc::ServerOptions server_options() const {
    ipc::ServerOptions o;
    o.socket_path = socket_path();
    o.shutdown_grace = std::chrono::milliseconds(200);
    return o;
  }

  void start_server(ipc::ServerOptions options,
                    std::chrono::microseconds tick = std::chrono::microseconds(300)) {
    dispatcher_ = std::make_unique<ScriptedDispatcher>(tick);
    server_ = std::make_unique<ipc::Server>(io_, options, *dispatcher_);
    auto started = server_->start();
    ASSERT_TRUE(started) << started.error().to_string();
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  void start_server() { start_server(server_options()); }

  void stop_server() {
    // The dispatcher first: its worker calls into sessions.
    if (dispatcher_) dispatcher_->stop();
    work_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    server_.reset();
  }

  ClientOptions client_options() const {
    ClientOptions o;
    o.use_shm = kShm;
    o.read_timeout = std::chrono::seconds(30);
    o.client_name = "ipc-test";
    return o;
  }

  std::unique_ptr<Client> connect() {
    auto client = Client::connect(socket_path(), client_options());
    EXPECT_TRUE(client) << client.error().to_string();
    if (!client) return nullptr;
    EXPECT_EQ((*client)->uses_shm(), kShm);
    return std::move(*client);
  }

  static GenerateRequest ids_request(int32_t first, uint32_t max_new_tokens) {
    GenerateRequest r;
    r.prompt = protocol::PromptIds{{first, 11, 12}};
    r.sampling.max_new_tokens = max_new_tokens;
    return r;
  }

  // Reads a stream to its end; checks each token is the scripted one.
  static Done drain(Stream& stream, int32_t first, int* tokens_seen = nullptr) {
    int seen = 0;
    for (;;) {
      auto event = stream.next();
      EXPECT_TRUE(event) << event.error().to_string();
      if (!event || !*event) return Done{};
      if (auto* tokens = std::get_if<TokenEvent>(&**event)) {
        for (int32_t t : tokens->token_ids) {
          EXPECT_EQ(t, first + seen) << "request " << stream.id();
          ++seen;
        }
        continue;
      }
      if (tokens_seen) *tokens_seen = seen;
      return std::get<Done>(**event);
    }
  }

  TempDir dir_;
  Watchdog watchdog_;
  boost::asio::io_context io_;
  std::unique_ptr<ScriptedDispatcher> dispatcher_;
  std::unique_ptr<ipc::Server> server_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      boost::asio::make_work_guard(io_)};
  std::vector<std::thread> threads_;
};

}  // namespace ringserve::testing
