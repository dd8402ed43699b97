#include "http/metrics.h"

#include <fmt/format.h>

namespace ringserve::http {
namespace {

void metric(std::string& out, const char* name, const char* type, const char* help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void sample(std::string& out, const char* name, double value, std::string_view labels = {}) {
  if (labels.empty()) {
    fmt::format_to(std::back_inserter(out), "{} {}\n", name, value);
  } else {
    fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value);
  }
}

void histogram(std::string& out, const char* name, const char* help,
               const serve::LatencyHistogram& h) {
  metric(out, name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.upper_bounds_s.size(); ++i) {
    cumulative += i < h.bucket_counts.size() ? h.bucket_counts[i] : 0;
    fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"{}\"}} {}\n", name,
                   h.upper_bounds_s[i], cumulative);
  }
  fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"+Inf\"}} {}\n", name, h.count);
  fmt::format_to(std::back_inserter(out), "{}_sum {}\n{}_count {}\n", name, h.sum_s, name, h.count);
}

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string render_metrics(const serve::StatsSnapshot* stats, const ServerFacts& facts) {
  std::string out;
  metric(out, "ringserve_ready", "gauge", "1 once the model is loaded and requests are served");
  sample(out, "ringserve_ready", facts.ready ? 1 : 0);
  metric(out, "ringserve_model_info", "gauge", "The served model and engine");
  sample(out, "ringserve_model_info", 1,
         fmt::format("model=\"{}\",engine=\"{}\"", escape_label(facts.model_name),
                     escape_label(stats ? stats->engine : "")));
  metric(out, "ringserve_model_load_seconds", "gauge",
         "Time to load the model and start the engine");
  sample(out, "ringserve_model_load_seconds", facts.model_load_seconds);
  metric(out, "ringserve_preflight_verdict", "gauge",
         "PCIe preflight verdict at start (label verdict: ok, warn, fail, skipped)");
  sample(out, "ringserve_preflight_verdict", 1,
         fmt::format("verdict=\"{}\"", escape_label(facts.preflight_verdict)));
  metric(out, "ringserve_http_connections", "gauge", "Open HTTP connections");
  sample(out, "ringserve_http_connections", static_cast<double>(facts.http_connections));
  metric(out, "ringserve_http_requests_total", "counter", "HTTP requests received");
  sample(out, "ringserve_http_requests_total", static_cast<double>(facts.http_requests_total));
  metric(out, "ringserve_http_errors_total", "counter",
         "HTTP requests answered with an error status");
  sample(out, "ringserve_http_errors_total", static_cast<double>(facts.http_errors_total));
  if (!stats) return out;

  const serve::StatsSnapshot& s = *stats;
  metric(out, "ringserve_requests_total", "counter",
         "Generation requests accepted (all transports)");
  sample(out, "ringserve_requests_total", static_cast<double>(s.requests_total));
  metric(out, "ringserve_prompt_tokens_total", "counter", "Prompt tokens processed");
  sample(out, "ringserve_prompt_tokens_total", static_cast<double>(s.prompt_tokens_total));
  metric(out, "ringserve_generation_tokens_total", "counter", "Tokens generated");
  sample(out, "ringserve_generation_tokens_total", static_cast<double>(s.completion_tokens_total));
  metric(out, "ringserve_requests_running", "gauge", "Sequences in the running batch");
  sample(out, "ringserve_requests_running", s.requests_active);
  metric(out, "ringserve_queue_depth", "gauge", "Requests waiting for admission");
  sample(out, "ringserve_queue_depth", s.queue_depth);
  metric(out, "ringserve_kv_cache_blocks", "gauge", "KV-cache blocks (label state: used, total)");
  sample(out, "ringserve_kv_cache_blocks", static_cast<double>(s.kv.blocks_used), "state=\"used\"");
  sample(out, "ringserve_kv_cache_blocks", static_cast<double>(s.kv.blocks_total),
         "state=\"total\"");
  metric(out, "ringserve_kv_cache_usage_ratio", "gauge", "Fraction of KV-cache blocks in use");
  sample(out, "ringserve_kv_cache_usage_ratio",
         s.kv.blocks_total > 0 ? static_cast<double>(s.kv.blocks_used) / s.kv.blocks_total : 0.0);
  metric(out, "ringserve_engine_steps_total", "counter", "Engine steps run");
  sample(out, "ringserve_engine_steps_total", static_cast<double>(s.steps_total));
  metric(out, "ringserve_engine_step_seconds_mean", "gauge", "Mean engine step time");
  sample(out, "ringserve_engine_step_seconds_mean", s.mean_step.count() / 1e6);

  // The batch-size histogram is exact: one bucket per batch size.
  metric(out, "ringserve_batch_size", "histogram", "Sequences per engine step");
  uint64_t cumulative = 0, sum = 0;
  for (size_t size = 1; size < s.batch_size_histogram.size(); ++size) {
    cumulative += s.batch_size_histogram[size];
    sum += size * s.batch_size_histogram[size];
    fmt::format_to(std::back_inserter(out), "ringserve_batch_size_bucket{{le=\"{}\"}} {}\n", size,
                   cumulative);
  }
  fmt::format_to(std::back_inserter(out),
                 "ringserve_batch_size_bucket{{le=\"+Inf\"}} {}\nringserve_batch_size_sum {}\n"
                 "ringserve_batch_size_count {}\n",
                 cumulative, sum, cumulative);

  histogram(out, "ringserve_time_to_first_token_seconds", "Arrival to first token",
            s.ttft_histogram);
  histogram(out, "ringserve_inter_token_latency_seconds", "Time between a request's tokens",
            s.itl_histogram);
  return out;
}

}  // namespace ringserve::http
