// Named spdlog loggers, one per subsystem: "ipc", "batch", "engine", "model",
// "tokenizer", "pcie", "http", "main". Request-scoped lines carry the request
// id as "req=<session>:<id>" so one request can be followed with grep.
//
// Levels: trace = per-token / per-record detail; debug = per-request
// lifecycle; info = start-up, shutdown, per-session connect/disconnect;
// warn = a peer or input misbehaved and was handled; error = we failed
// something we should have done.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace ringserve::log {

struct Options {
  std::string level = "info";  // trace, debug, info, warn, error, off
  bool json = false;           // one JSON object per line
};

// Installs the sink and pattern for every logger, present and future.
void configure(const Options& options);

// The named logger, created on first use with the configured sink and level.
std::shared_ptr<spdlog::logger> get(std::string_view name);

}  // namespace ringserve::log
