// ringbench's HTTP+JSON transport: streaming POST /v1/completions (SSE) over
// one keep-alive TCP connection, with Boost.Beast. The workload is the same
// as over the ring (token-id prompts, greedy, ignore_eos, exactly
// --output-len tokens); the request asks for "return_token_ids" so token
// counts are exact even when a chunk's text is empty, and reads ringserve's
// "timings" from the final chunk. Any OpenAI-compatible server works: with a
// model id set, the request names it and asks for "usage" too (see
// CompletionStreamReader for how tokens are then counted).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "results.h"
#include "ringserve/common/expected.h"

namespace ringbench {

struct HttpTarget {
  std::string host;
  uint16_t port = 0;
  std::string model;  // sent as "model" when not empty (from GET /v1/models)
};

// "127.0.0.1:8080", "http://127.0.0.1:8080", "http://localhost:8080/v1".
// Errors: kInvalidArgument.
ringserve::Expected<HttpTarget> parse_http_target(const std::string& text);

// One connection; not thread-safe (HTTP/1.1 carries one request at a time).
class HttpConnection {
 public:
  static ringserve::Expected<std::unique_ptr<HttpConnection>> connect(const HttpTarget& target);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Runs one request start to finish (reconnecting first if the server
  // closed the previous keep-alive connection).
  RequestRecord run(const std::vector<int32_t>& prompt, const Config& config, uint64_t seed,
                    std::chrono::steady_clock::time_point phase_start);

  // GET `path`: the body of a 200 answer. Errors: kUnavailable, kIoError.
  ringserve::Expected<std::string> get(const std::string& path);

  // One GET /health round trip (no engine involved), for the per-message cost.
  ringserve::Expected<std::chrono::nanoseconds> health_round_trip();

 private:
  struct Impl;
  explicit HttpConnection(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringbench
