#include "compare.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace ringbench {

using ringserve::Errc;
using ringserve::make_error;

ringserve::Expected<nlohmann::json> load_report(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::kNotFound, "{}: cannot open", path.string());
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(Errc::kCorruptData, "{}: not JSON", path.string());
  if (!j.is_object() || j.value("schema", "") != "ringbench/1" || !j.contains("results") ||
      !j["results"].is_object()) {
    return make_error(Errc::kCorruptData, "{}: not a ringbench/1 report", path.string());
  }
  return j;
}

namespace {

// A number at a JSON pointer, if the report has one there.
std::optional<double> number_at(const nlohmann::json& j, const std::string& pointer) {
  const nlohmann::json::json_pointer p(pointer);
  if (!j.contains(p) || !j.at(p).is_number()) return std::nullopt;
  // The server's own timings, when it sent none (not ringserve): no value.
  const nlohmann::json::json_pointer parent = p.parent_pointer();
  static const char* kServerTimed[] = {"/results/queue_ms", "/results/prefill_ms",
                                       "/results/ttft_overhead_ms", "/results/e2e_overhead_ms"};
  for (const char* timed : kServerTimed) {
    if (parent == nlohmann::json::json_pointer(timed) && j.at(parent).value("count", 1) == 0) {
      return std::nullopt;
    }
  }
  return j.at(p).get<double>();
}

std::string value_at(const nlohmann::json& j, const std::string& pointer) {
  const nlohmann::json::json_pointer p(pointer);
  if (!j.contains(p)) return "-";
  const nlohmann::json& v = j.at(p);
  if (v.is_string()) return v.get<std::string>().empty() ? "-" : v.get<std::string>();
  return v.dump();
}

}  // namespace

std::string format_comparison(const nlohmann::json& a, const nlohmann::json& b,
                              const std::string& name_a, const std::string& name_b) {
  struct Metric {
    const char* label;
    const char* pointer;
    bool higher_is_better;
  };
  static const Metric kMetrics[] = {
      {"output tokens/s", "/results/output_tokens_per_s", true},
      {"requests/s", "/results/requests_per_s", true},
      {"TTFT p50 (ms)", "/results/ttft_ms/p50", false},
      {"TTFT p90 (ms)", "/results/ttft_ms/p90", false},
      {"TTFT p99 (ms)", "/results/ttft_ms/p99", false},
      {"ITL p50 (ms)", "/results/itl_ms/p50", false},
      {"ITL p99 (ms)", "/results/itl_ms/p99", false},
      {"e2e p50 (ms)", "/results/e2e_ms/p50", false},
      {"e2e p99 (ms)", "/results/e2e_ms/p99", false},
      {"queue p50 (ms)", "/results/queue_ms/p50", false},
      {"queue p99 (ms)", "/results/queue_ms/p99", false},
      {"TTFT-server p50 (ms)", "/results/ttft_overhead_ms/p50", false},
      {"round trip p50 (us)", "/results/round_trip_us/p50", false},
      {"client CPU/tok (us)", "/results/client_cpu_us_per_token", false},
      {"failed requests", "/results/requests_failed", false},
  };
  static const char* kSettings[] = {
      "/config/mode",        "/config/input_len", "/config/output_len",   "/config/batch",
      "/config/concurrency", "/config/rate",      "/config/requests",     "/config/transport",
      "/server/engine",      "/server/model",     "/results/token_count", "/config/label"};
  std::string out;
  out += fmt::format("{:<20}{:>16}{:>16}{:>10}\n", "", name_a.substr(0, 15), name_b.substr(0, 15),
                     "B/A");
  for (const char* s : kSettings) {
    const std::string va = value_at(a, s), vb = value_at(b, s);
    if (va == "-" && vb == "-") continue;
    std::string label = std::string(s).substr(std::string(s).rfind('/') + 1);
    out += fmt::format("{:<20}{:>16}{:>16}{:>10}\n", label, va, vb, va == vb ? "" : "differs");
  }
  for (const Metric& m : kMetrics) {
    const std::optional<double> va = number_at(a, m.pointer), vb = number_at(b, m.pointer);
    const std::string sa = va ? fmt::format("{:.2f}", *va) : "-";
    const std::string sb = vb ? fmt::format("{:.2f}", *vb) : "-";
    std::string ratio = "-";
    if (va && vb && *va != 0.0) {
      const double r = *vb / *va;
      const bool better = m.higher_is_better ? r > 1.0 : r < 1.0;
      ratio = fmt::format("{:.2f}x{}", r, r == 1.0 ? "" : (better ? " +" : " -"));
    }
    out += fmt::format("{:<20}{:>16}{:>16}{:>10}\n", m.label, sa, sb, ratio);
  }
  out += "(+ : B better, - : B worse)\n";
  return out;
}

}  // namespace ringbench
