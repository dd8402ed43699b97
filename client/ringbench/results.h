// What ringbench measured: one record per request (client-side clocks plus
// the server's own timings from Done), and the summary computed from them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"

namespace ringbench {

// How a request's output tokens were counted, best first: the ids the
// stream carries (the ring; "return_token_ids" over HTTP), the server's
// "usage" (total only), or one per SSE chunk with text (approximate: a chunk
// may carry several tokens, or none while a character is incomplete).
enum class TokenCount { kTokenIds, kUsage, kChunks };
const char* token_count_name(TokenCount method);

// FNV-1a (64-bit) over token ids, four little-endian bytes each: a run's
// outputs in one number, to tell whether two runs generated the same tokens.
constexpr uint64_t kTokenDigestSeed = 0xcbf29ce484222325ull;
uint64_t digest_tokens(uint64_t digest, std::span<const int32_t> ids);

struct RequestRecord {
  bool ok = false;
  std::string error;  // when !ok
  int output_tokens = 0;
  uint64_t token_digest = kTokenDigestSeed;  // of the ids received, when they were
  TokenCount token_count = TokenCount::kTokenIds;
  double start_s = 0;          // when it was sent, from the start of the measured phase
  double ttft_ms = 0;          // sent -> first token event (client side)
  double e2e_ms = 0;           // sent -> Done
  std::vector<double> itl_ms;  // gaps between token events after the first
  // The server's own timings (Done over the ring, "timings" over HTTP).
  bool has_server_timings = false;
  double queue_ms = 0;         // arrival -> admitted into a batch
  double prefill_ms = 0;       // the prefill step
  double server_ttft_ms = 0;   // arrival -> first token
  double server_total_ms = 0;  // arrival -> done
};

// Turns the arrival times of a request's token events into its TTFT and
// inter-token gaps (tokens coalesced into one event share its gap).
class RequestTimer {
 public:
  RequestTimer(RequestRecord& record, std::chrono::steady_clock::time_point sent)
      : record_(record), sent_(sent), last_(sent) {}
  void tokens(int n, std::chrono::steady_clock::time_point now);

 private:
  RequestRecord& record_;
  std::chrono::steady_clock::time_point sent_, last_;
  bool first_ = true;
};

// Reads one streaming /v1/completions response from any OpenAI-compatible
// server: SSE bytes in as they arrive, the record's tokens, timings and
// outcome out. No I/O of its own.
class CompletionStreamReader {
 public:
  CompletionStreamReader(RequestRecord& record, std::chrono::steady_clock::time_point sent)
      : record_(record), timer_(record, sent) {}
  void feed(std::string_view bytes, std::chrono::steady_clock::time_point now);
  // The body has ended: settles the count and checks [DONE], the finish
  // reason and (unless counted by chunks) the exact length. Sets record.ok.
  void finish(int expected_tokens);

 private:
  void on_event(std::string_view data, std::chrono::steady_clock::time_point now);
  RequestRecord& record_;
  RequestTimer timer_;
  std::string pending_;  // bytes not yet split into events
  bool done_ = false;
  bool saw_token_ids_ = false;
  std::string finish_reason_;
  std::optional<int> usage_tokens_;
};

struct Distribution {
  size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
// Nearest-rank percentiles.
Distribution distribution(std::vector<double> samples);

struct Summary {
  int requests_ok = 0;
  int requests_failed = 0;
  double wall_s = 0;
  long long output_tokens = 0;
  double output_tokens_per_s = 0;
  double requests_per_s = 0;
  Distribution ttft_ms, itl_ms, e2e_ms, queue_ms, prefill_ms;
  // What the transport adds: the client's time minus the server's own for
  // the same span (request in + first token out; request in + Done out).
  Distribution ttft_overhead_ms, e2e_overhead_ms;
  // Round trips with no engine work (Ping over the ring or socket, GET
  // /health over HTTP), measured after the load: the per-message cost.
  Distribution round_trip_us;
  double client_cpu_us_per_token = 0;  // ringbench's own CPU time (user + system)
  std::vector<std::string> errors;     // the first few distinct ones
  std::string token_count;  // how tokens were counted: "token_ids", "usage+sse_chunks"...
  // The requests' token digests folded in request order (16 hex digits);
  // empty unless every request succeeded with its ids received.
  std::string token_digest;
};

Summary summarize(const std::vector<RequestRecord>& records, double wall_s);

struct Report {
  Config config;
  Summary summary;
  nlohmann::json server;   // engine, batch histogram... from Stats
  nlohmann::json machine;  // host, cpus, date
};

nlohmann::json to_json(const Summary& summary);
nlohmann::json report_json(const Report& report);

// The summary table for people.
std::string format_table(const Report& report);

// Several runs of the same load over different transports, side by side.
std::string format_transport_table(const std::vector<Report>& reports);

}  // namespace ringbench
