#include "results.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>

namespace ringbench {

using SteadyClock = std::chrono::steady_clock;
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

uint64_t digest_tokens(uint64_t digest, std::span<const int32_t> ids) {
  for (const int32_t id : ids) {
    const auto u = static_cast<uint32_t>(id);
    for (int byte = 0; byte < 4; ++byte) {
      digest ^= (u >> (8 * byte)) & 0xffu;
      digest *= 0x100000001b3ull;
    }
  }
  return digest;
}

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

const char* token_count_name(TokenCount method) {
  switch (method) {
    case TokenCount::kTokenIds:
      return "token_ids";
    case TokenCount::kUsage:
      return "usage";
    case TokenCount::kChunks:
      return "sse_chunks";
  }
  return "?";
}

void CompletionStreamReader::feed(std::string_view bytes, SteadyClock::time_point now) {
  // Events end with a blank line; "\r\n" line ends (some servers) become "\n".
  for (char ch : bytes) {
    if (ch != '\r') pending_ += ch;
  }
  size_t end;
  while ((end = pending_.find("\n\n")) != std::string::npos) {
    std::string_view event(pending_.data(), end);
    while (!event.empty()) {  // each "data:" line of the event
      const size_t eol = std::min(event.find('\n'), event.size());
      std::string_view line = event.substr(0, eol);
      event.remove_prefix(std::min(eol + 1, event.size()));
      if (line.rfind("data:", 0) != 0) continue;  // "event:", "id:", ": comment"
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      on_event(line, now);
    }
    pending_.erase(0, end + 2);
  }
}

void CompletionStreamReader::on_event(std::string_view data, SteadyClock::time_point now) {
  if (!record_.error.empty()) return;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  const nlohmann::json event = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!event.is_object()) {
    record_.error = "HTTP: an SSE event is not a JSON object";
    return;
  }
  if (event.contains("error")) {
    record_.error = fmt::format("HTTP stream error: {}", event["error"].dump());
    return;
  }
  // ringserve's own timings; other servers' (llama.cpp's prompt_ms...) differ.
  if (auto t = event.find("timings"); t != event.end() && t->is_object() &&
                                      t->contains("first_token_ms") && t->contains("total_ms")) {
    record_.has_server_timings = true;
    record_.queue_ms = t->value("queue_ms", 0.0);
    record_.prefill_ms = t->value("prefill_ms", 0.0);
    record_.server_ttft_ms = t->value("first_token_ms", 0.0);
    record_.server_total_ms = t->value("total_ms", 0.0);
  }
  if (auto u = event.find("usage"); u != event.end() && u->is_object()) {
    if (auto n = u->find("completion_tokens"); n != u->end() && n->is_number_integer()) {
      usage_tokens_ = n->get<int>();
    }
  }
  auto choices = event.find("choices");
  if (choices == event.end() || !choices->is_array() || choices->empty()) return;
  const nlohmann::json& choice = (*choices)[0];
  if (!choice.is_object()) return;
  if (auto ids = choice.find("token_ids"); ids != choice.end() && ids->is_array()) {
    saw_token_ids_ = true;
    timer_.tokens(static_cast<int>(ids->size()), now);
    std::vector<int32_t> got;
    got.reserve(ids->size());
    for (const auto& id : *ids) got.push_back(id.is_number_integer() ? id.get<int32_t>() : -1);
    record_.token_digest = digest_tokens(record_.token_digest, got);
  } else if (auto text = choice.find("text"); !saw_token_ids_ && text != choice.end() &&
                                              text->is_string() &&
                                              !text->get_ref<const std::string&>().empty()) {
    timer_.tokens(1, now);
  }
  if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) {
    finish_reason_ = f->get<std::string>();
  }
}

void CompletionStreamReader::finish(int expected_tokens) {
  if (saw_token_ids_) {
    record_.token_count = TokenCount::kTokenIds;
  } else if (usage_tokens_) {
    record_.token_count = TokenCount::kUsage;
    record_.output_tokens = *usage_tokens_;
  } else {
    record_.token_count = TokenCount::kChunks;
  }
  if (!record_.error.empty()) return;
  if (!done_) {
    record_.error = "HTTP: the stream ended without [DONE]";
    return;
  }
  if (finish_reason_ != "length") {
    record_.error =
        fmt::format("finished with {}{}", finish_reason_.empty() ? "nothing" : finish_reason_,
                    finish_reason_ == "stop" ? " (the server ignored ignore_eos?)" : "");
    return;
  }
  if (record_.token_count != TokenCount::kChunks && record_.output_tokens != expected_tokens) {
    record_.error =
        fmt::format("got {} tokens, expected {}", record_.output_tokens, expected_tokens);
    return;
  }
  record_.ok = true;
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
  std::set<std::string> methods;
  for (const RequestRecord& r : records) {
    if (!r.ok) {
      ++s.requests_failed;
      if (s.errors.size() < 5 && seen.insert(r.error).second) s.errors.push_back(r.error);
      continue;
    }
    ++s.requests_ok;
    s.output_tokens += r.output_tokens;
    methods.insert(token_count_name(r.token_count));
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
  for (const std::string& m : methods) s.token_count += (s.token_count.empty() ? "" : "+") + m;
  const bool every_id_seen =
      !records.empty() && std::all_of(records.begin(), records.end(), [](const RequestRecord& r) {
        return r.ok && r.token_count == TokenCount::kTokenIds;
      });
  if (every_id_seen) {
    uint64_t digest = kTokenDigestSeed;
    for (const RequestRecord& r : records) {
      const int32_t words[2] = {static_cast<int32_t>(static_cast<uint32_t>(r.token_digest)),
                                static_cast<int32_t>(static_cast<uint32_t>(r.token_digest >> 32))};
      digest = digest_tokens(digest, words);
    }
    s.token_digest = fmt::format("{:016x}", digest);
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
          {"token_count", s.token_count},
          {"token_digest", s.token_digest},
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
  } else if (r.server.contains("facts_from")) {
    out += fmt::format(
        "server: model '{}' (OpenAI-compatible HTTP, no socket: no server stats), "
        "prompt ids from a vocabulary of {} ({})\n",
        r.server.value("model", ""), r.server.value("prompt_vocab", 0),
        r.server.value("prompt_vocab_from", ""));
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
  // The server's own timings: "n/a" when it sent none (not ringserve).
  auto server_row = [&](const char* name, const Distribution& d) {
    if (d.count > 0 || s.requests_ok == 0) return row(name, d);
    out += fmt::format("{:<18}{:>10}{:>10}{:>10}{:>10}{:>10}\n", name, "n/a", "n/a", "n/a", "n/a",
                       "n/a");
  };
  row("time to 1st token", s.ttft_ms);
  row("inter-token", s.itl_ms);
  row("end to end", s.e2e_ms);
  server_row("queue (server)", s.queue_ms);
  server_row("prefill (server)", s.prefill_ms);
  server_row("TTFT - server's", s.ttft_overhead_ms);
  server_row("e2e - server's", s.e2e_overhead_ms);
  if (r.config.transport == Transport::kHttp && !s.token_count.empty()) {
    out += fmt::format("output tokens counted from: {}{}\n", s.token_count,
                       s.token_count.find("sse_chunks") != std::string::npos
                           ? " (approximate: one token per chunk)"
                           : "");
  }
  out += fmt::format("client CPU per token: {:.1f} us\n", s.client_cpu_us_per_token);
  if (!s.token_digest.empty()) out += fmt::format("token digest: {}\n", s.token_digest);
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
  // `has` (when set) says whether the report has the value: the server's
  // own timings and step times come from ringserve only; others show n/a.
  struct Row {
    const char* label;
    double (*get)(const Report&);
    int decimals;
    bool (*has)(const Report&);
  };
  static const auto kTimed = [](const Report& r) { return r.summary.ttft_overhead_ms.count > 0; };
  static const auto kStepped = [](const Report& r) {
    return r.server.contains("run_mean_step_us");
  };
  static const Row kRows[] = {
      {"output tokens/s", [](const Report& r) { return r.summary.output_tokens_per_s; }, 1,
       nullptr},
      {"TTFT mean (ms)", [](const Report& r) { return r.summary.ttft_ms.mean; }, 3, nullptr},
      {"TTFT p50 (ms)", [](const Report& r) { return r.summary.ttft_ms.p50; }, 3, nullptr},
      {"TTFT p99 (ms)", [](const Report& r) { return r.summary.ttft_ms.p99; }, 3, nullptr},
      {"TTFT - server's, mean (ms)",
       [](const Report& r) { return r.summary.ttft_overhead_ms.mean; }, 3, kTimed},
      {"TTFT - server's, p50 (ms)", [](const Report& r) { return r.summary.ttft_overhead_ms.p50; },
       3, kTimed},
      {"ITL mean (ms)", [](const Report& r) { return r.summary.itl_ms.mean; }, 3, nullptr},
      {"ITL p50 (ms)", [](const Report& r) { return r.summary.itl_ms.p50; }, 3, nullptr},
      {"ITL p99 (ms)", [](const Report& r) { return r.summary.itl_ms.p99; }, 3, nullptr},
      {"e2e - server's, mean (ms)", [](const Report& r) { return r.summary.e2e_overhead_ms.mean; },
       3, kTimed},
      {"engine step mean (ms)",
       [](const Report& r) { return r.server.value("run_mean_step_us", 0.0) / 1000.0; }, 3,
       kStepped},
      {"idle round trip p50 (us)", [](const Report& r) { return r.summary.round_trip_us.p50; }, 1,
       nullptr},
      {"idle round trip p99 (us)", [](const Report& r) { return r.summary.round_trip_us.p99; }, 1,
       nullptr},
      {"client CPU per token (us)",
       [](const Report& r) { return r.summary.client_cpu_us_per_token; }, 1, nullptr},
      {"failed requests",
       [](const Report& r) { return static_cast<double>(r.summary.requests_failed); }, 0, nullptr},
  };
  std::string load = reports[0].config.describe();
  load.resize(std::min(load.size(), load.rfind(", transport ")));
  std::string out = fmt::format("transports side by side: {}\n{:<32}", load, "");
  for (const Report& r : reports) out += fmt::format("{:>12}", transport_name(r.config.transport));
  out += "\n";
  for (const Row& row : kRows) {
    out += fmt::format("{:<32}", row.label);
    for (const Report& r : reports) {
      out += row.has && !row.has(r) ? fmt::format("{:>12}", "n/a")
                                    : fmt::format("{:>12.{}f}", row.get(r), row.decimals);
    }
    out += "\n";
  }
  return out;
}

}  // namespace ringbench
