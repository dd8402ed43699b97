// What ringbench measured: one record per request (client-side clocks plus
// the server's own timings from Done), and the summary computed from them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"

namespace ringbench {

struct RequestRecord {
  bool ok = false;
  std::string error;  // when !ok
  int output_tokens = 0;
  double start_s = 0;          // when it was sent, from the start of the measured phase
  double ttft_ms = 0;          // sent -> first token event (client side)
  double e2e_ms = 0;           // sent -> Done
  double queue_ms = 0;         // server: arrival -> admitted into a batch
  double prefill_ms = 0;       // server: the prefill step
  std::vector<double> itl_ms;  // gaps between token events after the first
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
  std::vector<std::string> errors;  // the first few distinct ones
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

}  // namespace ringbench
