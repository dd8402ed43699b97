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

void RequestTimer::tokens(int n, std::chrono::steady_clock::time_point now) {
  if (n <= 0) return;
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  record_.output_tokens += n;
  if (first_) {
    record_.ttft_ms = ms(sent_, now);
    first_ = false;
    // Tokens delivered together with the first one have no gap of their own.
    for (int i = 1; i < n; ++i) record_.itl_ms.push_back(0.0);
  } else {
    for (int i = 0; i < n; ++i) record_.itl_ms.push_back(ms(last_, now) / n);
  }
  last_ = now;
}

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
  std::vector<double> ttft, itl, e2e, queue, prefill, ttft_overhead, e2e_overhead;
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
    if (r.has_server_timings) {
      queue.push_back(r.queue_ms);
      prefill.push_back(r.prefill_ms);
      ttft_overhead.push_back(r.ttft_ms - r.server_ttft_ms);
      e2e_overhead.push_back(r.e2e_ms - r.server_total_ms);
    }
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
  s.ttft_overhead_ms = distribution(std::move(ttft_overhead));
  s.e2e_overhead_ms = distribution(std::move(e2e_overhead));
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
          {"ttft_overhead_ms", to_json(s.ttft_overhead_ms)},
          {"e2e_overhead_ms", to_json(s.e2e_overhead_ms)},
          {"client_cpu_us_per_token", s.client_cpu_us_per_token},
          {"round_trip_us", to_json(s.round_trip_us)},
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
  row("TTFT - server's", s.ttft_overhead_ms);
  row("e2e - server's", s.e2e_overhead_ms);
  out += fmt::format("client CPU per token: {:.1f} us\n", s.client_cpu_us_per_token);
  if (s.round_trip_us.count > 0) {
    out += fmt::format("idle round trip: p50 {:.1f} us, p99 {:.1f} us ({} samples)\n",
                       s.round_trip_us.p50, s.round_trip_us.p99, s.round_trip_us.count);
  }
  if (r.server.contains("batch_size_histogram")) {
    out += fmt::format("server batch sizes (steps): {}\n", r.server["batch_size_histogram"].dump());
  }
  for (const std::string& e : s.errors) out += fmt::format("error: {}\n", e);
  return out;
}

}  // namespace ringbench

namespace ringbench {

std::string format_transport_table(const std::vector<Report>& reports) {
  if (reports.empty()) return {};
  struct Row {
    const char* label;
    double (*get)(const Report&);
    int decimals;
  };
  static const Row kRows[] = {
      {"output tokens/s", [](const Report& r) { return r.summary.output_tokens_per_s; }, 1},
      {"TTFT mean (ms)", [](const Report& r) { return r.summary.ttft_ms.mean; }, 3},
      {"TTFT p50 (ms)", [](const Report& r) { return r.summary.ttft_ms.p50; }, 3},
      {"TTFT p99 (ms)", [](const Report& r) { return r.summary.ttft_ms.p99; }, 3},
      {"TTFT - server's, mean (ms)",
       [](const Report& r) { return r.summary.ttft_overhead_ms.mean; }, 3},
      {"TTFT - server's, p50 (ms)", [](const Report& r) { return r.summary.ttft_overhead_ms.p50; },
       3},
      {"ITL mean (ms)", [](const Report& r) { return r.summary.itl_ms.mean; }, 3},
      {"ITL p50 (ms)", [](const Report& r) { return r.summary.itl_ms.p50; }, 3},
      {"ITL p99 (ms)", [](const Report& r) { return r.summary.itl_ms.p99; }, 3},
      {"e2e - server's, mean (ms)", [](const Report& r) { return r.summary.e2e_overhead_ms.mean; },
       3},
      {"engine step mean (ms)",
       [](const Report& r) { return r.server.value("run_mean_step_us", 0.0) / 1000.0; }, 3},
      {"idle round trip p50 (us)", [](const Report& r) { return r.summary.round_trip_us.p50; }, 1},
      {"idle round trip p99 (us)", [](const Report& r) { return r.summary.round_trip_us.p99; }, 1},
      {"client CPU per token (us)",
       [](const Report& r) { return r.summary.client_cpu_us_per_token; }, 1},
      {"failed requests",
       [](const Report& r) { return static_cast<double>(r.summary.requests_failed); }, 0},
  };
  std::string load = reports[0].config.describe();
  load.resize(std::min(load.size(), load.rfind(", transport ")));
  std::string out = fmt::format("transports side by side: {}\n{:<32}", load, "");
  for (const Report& r : reports) out += fmt::format("{:>12}", transport_name(r.config.transport));
  out += "\n";
  for (const Row& row : kRows) {
    out += fmt::format("{:<32}", row.label);
    for (const Report& r : reports) out += fmt::format("{:>12.{}f}", row.get(r), row.decimals);
    out += "\n";
  }
  return out;
}

}  // namespace ringbench
