// ipc_test_server: the real ipc::Server over a ScriptedDispatcher, for
// tests that need a separate server process (signals, exit status).
//   ipc_test_server --socket PATH [--tick-us N] [ipc flags...]
// Prints "listening on PATH" once clients can connect. SIGINT/SIGTERM:
// graceful shutdown with --shutdown-grace-ms, then exit 0.
#include <chrono>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "ipc/options.h"
#include "ipc/server.h"
#include "scripted_dispatcher.h"

int main(int argc, char** argv) {
  CLI::App app{"ipc_test_server: ipc::Server over a scripted dispatcher"};
  ringserve::ipc::ServerOptions options;
  int64_t tick_us = 1000;
  ringserve::ipc::add_cli_flags(app, options);
  app.add_option("--tick-us", tick_us, "Microseconds between scripted tokens");
  CLI11_PARSE(app, argc, argv);
  if (auto valid = ringserve::ipc::validate(options); !valid) {
    std::fprintf(stderr, "ipc_test_server: %s\n", valid.error().to_string().c_str());
    return 2;
  }

  ringserve::testing::ScriptedDispatcher dispatcher{std::chrono::microseconds(tick_us)};
  boost::asio::io_context io;
  ringserve::ipc::Server server(io, options, dispatcher);
  if (auto started = server.start(); !started) {
    std::fprintf(stderr, "ipc_test_server: %s\n", started.error().to_string().c_str());
    return 1;
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    server.shutdown(options.shutdown_grace, [&] {
      dispatcher.stop();
      io.stop();
    });
  });
  std::printf("listening on %s\n", server.socket_path().c_str());
  std::fflush(stdout);

  std::thread second([&] { io.run(); });
  io.run();
  second.join();
  return 0;
}
