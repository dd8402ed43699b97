// Native request and event types between the transports (socket, ring,
// HTTP) and the scheduler. FlatBuffers and JSON are converted to these at the
// edge; nothing below the transports sees a wire type.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "ringserve/common/expected.h"

namespace ringserve::serve {

using Clock = std::chrono::steady_clock;

enum class FinishReason { kStop, kLength, kCancelled, kError };

// "stop", "length", "cancelled", "error": for logs and OpenAI's finish_reason.
const char* finish_reason_name(FinishReason reason);

struct StopCriteria {
  int max_new_tokens = 256;
  std::vector<std::string> stop_strings;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
};

struct Request {
  uint64_t id = 0;              // server-wide unique, assigned by the transport
  std::string log_id;           // "<session>:<client request id>", for log lines
  std::vector<int32_t> prompt;  // tokenized at the edge (text and chat too)
  engine::SamplingParams sampling;
  StopCriteria stop;
  bool stream = true;  // false: deliver everything in one TokenDelta
  Clock::time_point arrival = Clock::now();
};

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<engine::TokenLogprob> top;
};

struct TokenDelta {
  uint64_t id = 0;
  std::vector<int32_t> tokens;
  std::string text;                     // complete UTF-8 only
  std::vector<TokenLogprobs> logprobs;  // one per token when requested
};

struct Timings {
  std::chrono::microseconds queue{0};        // arrival -> admitted into a batch
  std::chrono::microseconds prefill{0};      // the prefill step's duration
  std::chrono::microseconds first_token{0};  // arrival -> first token
  std::chrono::microseconds total{0};        // arrival -> done
  std::chrono::microseconds mean_itl{0};
  std::chrono::microseconds max_itl{0};
};

struct Completion {
  uint64_t id = 0;
  FinishReason reason = FinishReason::kStop;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  Timings timings;
  std::string stop_string;  // the stop string that matched, if any
  Error error;              // meaningful when reason == kError
};

// Receives a request's events. Called on the engine thread: implementations
// must not block (post to their own executor and return).
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void on_tokens(TokenDelta delta) = 0;
  virtual void on_done(Completion completion) = 0;  // exactly once, last
};

// A Prometheus-style latency histogram: bucket_counts[i] counts observations
// in (upper_bounds_s[i-1], upper_bounds_s[i]]; the last bucket is +Inf.
struct LatencyHistogram {
  std::vector<double> upper_bounds_s;
  std::vector<uint64_t> bucket_counts;
  double sum_s = 0.0;
  uint64_t count = 0;

  // Bounds from 0.5 ms to 10 s, roughly x2.5 apart: wide enough for a
  // sub-millisecond GPU decode step and a multi-second CPU prefill.
  static LatencyHistogram with_default_bounds() {
    LatencyHistogram h;
    h.upper_bounds_s = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                        0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0};
    h.bucket_counts.assign(h.upper_bounds_s.size() + 1, 0);
    return h;
  }
  void observe(double seconds) {
    size_t i = 0;
    while (i < upper_bounds_s.size() && seconds > upper_bounds_s[i]) ++i;
    if (bucket_counts.size() != upper_bounds_s.size() + 1)
      bucket_counts.assign(upper_bounds_s.size() + 1, 0);
    ++bucket_counts[i];
    sum_s += seconds;
    ++count;
  }
};

struct StatsSnapshot {
  uint64_t requests_total = 0;
  uint32_t requests_active = 0;
  uint32_t queue_depth = 0;
  uint64_t prompt_tokens_total = 0;
  uint64_t completion_tokens_total = 0;
  std::vector<uint64_t> batch_size_histogram;  // index = sequences in a step
  uint64_t steps_total = 0;
  std::chrono::microseconds mean_step{0};
  std::chrono::microseconds ttft_p50{0}, ttft_p99{0}, itl_p50{0}, itl_p99{0};
  engine::KvUsage kv;
  std::string engine;
  // Since start (not windowed), for /metrics.
  LatencyHistogram ttft_histogram = LatencyHistogram::with_default_bounds();
  LatencyHistogram itl_histogram = LatencyHistogram::with_default_bounds();
};

// What transports talk to. submit() validates and queues (or returns an
// Error the transport sends back); events arrive on the sink; cancel() of an
// unknown or finished id is a no-op. Thread-safe.
class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  virtual Status submit(Request request, std::shared_ptr<RequestSink> sink) = 0;
  virtual void cancel(uint64_t request_id) = 0;
  virtual StatsSnapshot stats() const = 0;
  virtual const engine::EngineInfo& engine_info() const = 0;
};

}  // namespace ringserve::serve
