// GET /metrics in the Prometheus text exposition format (version 0.0.4).
#pragma once

#include <cstdint>
#include <string>

#include "scheduler/request.h"

namespace ringserve::http {

// Facts about the process that the scheduler does not know.
struct ServerFacts {
  bool ready = false;
  double model_load_seconds = 0.0;
  std::string model_name;
  std::string preflight_verdict;  // "ok", "warn", "fail", "skipped"
  uint64_t http_connections = 0;
  uint64_t http_requests_total = 0;
  uint64_t http_errors_total = 0;
};

// `stats` may be null while the model is still loading.
std::string render_metrics(const serve::StatsSnapshot* stats, const ServerFacts& facts);

}  // namespace ringserve::http
