#include "results.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>

namespace ringbench {
namespace {

double nearest_rank(const std::vector<double>& sorted, double q) {
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t index = rank < 1.0 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

nlohmann::json to_json(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50},
          {"p90", d.p90},     {"p99", d.p99},   {"max", d.max}};
}

}  // namespace

Distribution distribution(std::vector<double> samples) {
  Distribution d;
  d.count = samples.size();
  if (samples.empty()) return d;
  std::sort(samples.begin(), samples.end());
  d.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(d.count);
  d.p50 = nearest_rank(samples, 0.50);
  d.p90 = nearest_rank(samples, 0.90);
  d.p99 = nearest_rank(samples, 0.99);
  d.max = samples.back();
  return d;
}

Summary summarize(const std::vector<RequestRecord>& records, double wall_s) {
  Summary s;
  s.wall_s = wall_s;
  std::vector<double> ttft, itl, e2e, queue, prefill;
  std::set<std::string> seen;
  for (const RequestRecord& r : records) {
    if (!r.ok) {
      ++s.requests_failed;
      if (s.errors.size() < 5 && seen.insert(r.error).second) s.errors.push_back(r.error);
      continue;
    }
    ++s.requests_ok;
    s.output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_ms);
    e2e.push_back(r.e2e_ms);
    queue.push_back(r.queue_ms);
    prefill.push_back(r.prefill_ms);
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
  }
  if (wall_s > 0) {
    s.output_tokens_per_s = static_cast<double>(s.output_tokens) / wall_s;
    s.requests_per_s = s.requests_ok / wall_s;
  }
  s.ttft_ms = distribution(std::move(ttft));
  s.itl_ms = distribution(std::move(itl));
  s.e2e_ms = distribution(std::move(e2e));
  s.queue_ms = distribution(std::move(queue));
  s.prefill_ms = distribution(std::move(prefill));
  return s;
}

nlohmann::json to_json(const Summary& s) {
  return {{"requests_ok", s.requests_ok},
          {"requests_failed", s.requests_failed},
          {"wall_s", s.wall_s},
          {"output_tokens", s.output_tokens},
          {"output_tokens_per_s", s.output_tokens_per_s},
          {"requests_per_s", s.requests_per_s},
          {"ttft_ms", to_json(s.ttft_ms)},
          {"itl_ms", to_json(s.itl_ms)},
          {"e2e_ms", to_json(s.e2e_ms)},
          {"queue_ms", to_json(s.queue_ms)},
          {"prefill_ms", to_json(s.prefill_ms)},
          {"errors", s.errors}};
}

nlohmann::json report_json(const Report& r) {
  return {{"schema", "ringbench/1"},
          {"config", to_json(r.config)},
          {"results", to_json(r.summary)},
          {"server", r.server},
          {"machine", r.machine}};
}

std::string format_table(const Report& r) {
  const Summary& s = r.summary;
  std::string out;
  out += fmt::format("ringbench: {}\n", r.config.describe());
  if (r.server.contains("engine")) {
    out += fmt::format("server: {} engine\n", r.server["engine"].get<std::string>());
  }
  out += fmt::format("requests: {} ok, {} failed in {:.2f} s\n", s.requests_ok, s.requests_failed,
                     s.wall_s);
  out += fmt::format("{:<28}{:>12}\n", "output tokens/s",
                     fmt::format("{:.1f}", s.output_tokens_per_s));
  out += fmt::format("{:<28}{:>12}\n", "requests/s", fmt::format("{:.3f}", s.requests_per_s));
  out += fmt::format("{:<18}{:>10}{:>10}{:>10}{:>10}{:>10}\n", "latency (ms)", "mean", "p50", "p90",
                     "p99", "max");
  auto row = [&out](const char* name, const Distribution& d) {
    out += fmt::format("{:<18}{:>10.2f}{:>10.2f}{:>10.2f}{:>10.2f}{:>10.2f}\n", name, d.mean, d.p50,
                       d.p90, d.p99, d.max);
  };
  row("time to 1st token", s.ttft_ms);
  row("inter-token", s.itl_ms);
  row("end to end", s.e2e_ms);
  row("queue (server)", s.queue_ms);
  row("prefill (server)", s.prefill_ms);
  if (r.server.contains("batch_size_histogram")) {
    out += fmt::format("server batch sizes (steps): {}\n", r.server["batch_size_histogram"].dump());
  }
  for (const std::string& e : s.errors) out += fmt::format("error: {}\n", e);
  return out;
}

}  // namespace ringbench
