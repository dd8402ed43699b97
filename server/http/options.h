// Settings of the OpenAI-compatible HTTP endpoint (`--http HOST:PORT`).
// Off unless given; loopback by default, with a loud warning for anything
// else, because the endpoint has no authentication.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "ringserve/common/expected.h"

namespace ringserve::http {

struct HttpOptions {
  std::string listen;  // "HOST:PORT"; empty = HTTP off
  uint32_t max_connections = 256;
  uint32_t header_limit_bytes = 16u << 10;
  uint32_t body_limit_bytes = 4u << 20;
  // A request's headers and body must arrive within this time (slow-loris),
  // and an idle keep-alive connection is closed after it.
  std::chrono::milliseconds read_timeout{30000};
  // Default max_tokens when a chat request gives none: the rest of the
  // context, capped here (reasoning models think for a long time).
  uint32_t default_max_tokens = 4096;
  // Bytes of unsent SSE a slow reader may hold before we give up on it.
  uint32_t max_pending_write_bytes = 8u << 20;
  std::string model_name;  // reported by /v1/models; defaults to the engine's
  // Not a flag of its own: `serve` copies the socket's --max-prompt-tokens.
  uint32_t max_prompt_tokens = 32768;
};

struct ListenAddress {
  std::string host;
  uint16_t port = 0;
  bool loopback = true;
};

// "127.0.0.1:8080", "localhost:8080", "[::1]:8080", ":8080" (loopback).
// Errors: kInvalidArgument.
Expected<ListenAddress> parse_listen_address(const std::string& text);

// Registers --http, --http-max-connections, --http-max-body-bytes,
// --http-read-timeout-ms and --http-default-max-tokens.
void add_cli_flags(CLI::App& app, HttpOptions& options);

}  // namespace ringserve::http
