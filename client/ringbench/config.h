// What one ringbench run does. Three shapes of load:
//   batch (default)  --runs R rounds, each submitting --batch B requests at
//                    once and waiting for all of them (the article's bench)
//   closed loop      --concurrency N workers, --requests total
//   open loop        --rate R requests/s with Poisson arrivals, --requests total
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ringbench {

// shm: socket + shared-memory ring; socket: every message over the socket;
// http: HTTP+JSON streaming /v1/completions (ringserve's socket, where it is
// reachable, carries the server's facts and stats; without it any
// OpenAI-compatible server can be measured, its facts from GET /v1/models).
enum class Transport { kShm, kSocket, kHttp };

struct Config {
  std::string socket_path;                      // empty: the SDK's default path
  std::string http_address = "127.0.0.1:8080";  // HOST:PORT of `serve --http`
  Transport transport = Transport::kShm;
  int input_len = 512;
  int output_len = 256;
  int batch = 1;
  int runs = 10;
  std::optional<int> concurrency;
  std::optional<int> requests;
  std::optional<double> rate;  // requests per second
  int warmup = 1;
  uint64_t seed = 1;
  std::string json_path;   // empty: no JSON file
  bool progress = true;    // drawn only when stderr is a terminal
  double timeout_s = 600;  // per request
  std::string label;       // free text stored in the JSON (e.g. the server's batch policy)
  // HTTP without ringserve's socket (--no-socket, or no socket to reach):
  bool no_socket = false;    // do not even try the socket
  std::optional<int> vocab;  // prompt ids come from this vocabulary's range
  std::string model;         // "model" to send; empty: the first of GET /v1/models
  // How every request samples: greedy unless temperature > 0. Request i of
  // a phase is seeded with request_seed(i), so a sampled run repeats.
  float temperature = 0.0f;
  float top_p = 1.0f;
  int top_k = 0;
  // Below 2^63: OpenAI-compatible servers take the seed as a signed integer.
  uint64_t request_seed(uint64_t request) const {
    return (seed * 0x9E3779B97F4A7C15ull + request) >> 1;
  }

  enum class Mode { kBatch, kClosedLoop, kOpenLoop };
  Mode mode() const;
  int total_requests() const;
  std::string describe() const;  // one line for the table header
};

const char* transport_name(Transport t);
nlohmann::json to_json(const Config& config);

}  // namespace ringbench
