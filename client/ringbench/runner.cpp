#include "runner.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "http_transport.h"
#include "progress.h"
#include "workload.h"

namespace ringbench {

using ringserve::Client;
using ringserve::ClientOptions;
using ringserve::Errc;
using ringserve::Expected;
using ringserve::make_error;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr int kRoundTrips = 200;

double ms_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// One request, start to Done, timed on this thread.
RequestRecord run_ring(Client& client, const std::vector<int32_t>& prompt, const Config& config,
                       uint64_t seed, SteadyClock::time_point phase_start) {
  RequestRecord record;
  ringserve::GenerateRequest request;
  request.prompt = ringserve::protocol::PromptIds{prompt};
  request.sampling.max_new_tokens = static_cast<uint32_t>(config.output_len);
  request.sampling.ignore_eos = true;  // exactly output_len tokens
  request.sampling.temperature = config.temperature;
  if (config.temperature > 0.0f) {
    request.sampling.top_p = config.top_p;
    request.sampling.top_k = static_cast<uint32_t>(config.top_k);
    request.sampling.seed = seed;
  }
  const SteadyClock::time_point sent = SteadyClock::now();
  record.start_s = std::chrono::duration<double>(sent - phase_start).count();
  auto stream = client.generate(request);
  if (!stream) {
    record.error = stream.error().to_string();
    return record;
  }
  RequestTimer timer(record, sent);
  while (true) {
    auto event = stream->next();
    if (!event) {
      record.error = event.error().to_string();
      return record;
    }
    if (!*event) break;
    const SteadyClock::time_point now = SteadyClock::now();
    if (const auto* tokens = std::get_if<ringserve::TokenEvent>(&**event)) {
      timer.tokens(static_cast<int>(tokens->token_ids.size()), now);
      record.token_digest = digest_tokens(record.token_digest, tokens->token_ids);
    } else if (const auto* done = std::get_if<ringserve::Done>(&**event)) {
      record.e2e_ms = ms_between(sent, now);
      record.has_server_timings = true;
      record.queue_ms = static_cast<double>(done->timings.queue_us) / 1000.0;
      record.prefill_ms = static_cast<double>(done->timings.prefill_us) / 1000.0;
      record.server_ttft_ms = static_cast<double>(done->timings.first_token_us) / 1000.0;
      record.server_total_ms = static_cast<double>(done->timings.total_us) / 1000.0;
      if (done->reason != ringserve::FinishReason::kLength) {
        record.error = fmt::format("finished with {}{}{}",
                                   ringserve::protocol::finish_reason_name(done->reason),
                                   done->error_message.empty() ? "" : ": ", done->error_message);
        return record;
      }
    }
  }
  if (record.output_tokens != config.output_len) {
    record.error =
        fmt::format("got {} tokens, expected {}", record.output_tokens, config.output_len);
    return record;
  }
  record.ok = true;
  return record;
}

nlohmann::json stats_json(const ringserve::ServerStats& s) {
  return {{"engine", s.engine},
          {"requests_total", s.requests_total},
          {"steps_total", s.steps_total},
          {"batch_size_histogram", s.batch_size_histogram},
          {"mean_step_us", s.mean_step_us},
          {"kv_blocks_total", s.kv_blocks_total}};
}

nlohmann::json machine_json() {
  nlohmann::json m;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m["hostname"] = host;
  m["cpus"] = std::thread::hardware_concurrency();
  utsname u{};
  if (uname(&u) == 0) m["kernel"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  const std::time_t now = std::time(nullptr);
  char date[64] = {};
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m["date"] = date;
  return m;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// Sends requests over the run's transport: the SDK's clients (each
// thread-safe, shared round-robin) or one HTTP connection per worker (made
// on first use; open-loop requests each get their own).
class Transports {
 public:
  Transports(const Config& config, std::vector<std::unique_ptr<Client>>& clients,
             std::optional<HttpTarget> http)
      : config_(config), clients_(clients), http_(std::move(http)) {}

  ringserve::Status prepare_workers(int workers) {
    if (!http_) return ringserve::ok();
    while (static_cast<int>(connections_.size()) < workers) {
      connections_.push_back(RS_TRY(HttpConnection::connect(*http_)));
    }
    return ringserve::ok();
  }

  // `request`: the request's index in its phase, which seeds its sampling.
  RequestRecord run(int worker, size_t request, const std::vector<int32_t>& prompt,
                    SteadyClock::time_point phase_start) {
    const uint64_t seed = config_.request_seed(request);
    if (!http_) {
      return run_ring(*clients_[static_cast<size_t>(worker) % clients_.size()], prompt, config_,
                      seed, phase_start);
    }
    if (worker >= 0)
      return connections_[static_cast<size_t>(worker)]->run(prompt, config_, seed, phase_start);
    auto connection = HttpConnection::connect(*http_);
    if (!connection) {
      RequestRecord failed;
      failed.error = connection.error().to_string();
      return failed;
    }
    return (*connection)->run(prompt, config_, seed, phase_start);
  }

  // `count` sequential round trips that involve no engine work.
  std::vector<double> round_trips_us(int count) {
    std::vector<double> out;
    for (int i = 0; i < count; ++i) {
      auto rtt = http_ ? connections_[0]->health_round_trip() : clients_[0]->ping();
      if (!rtt) break;
      out.push_back(std::chrono::duration<double, std::micro>(*rtt).count());
    }
    return out;
  }

 private:
  const Config& config_;
  std::vector<std::unique_ptr<Client>>& clients_;
  std::optional<HttpTarget> http_;
  std::vector<std::unique_ptr<HttpConnection>> connections_;
};

// What the load is shaped by: from ringserve's socket, or, without it, from
// the HTTP API and the flags.
struct ServedFacts {
  std::string model;
  int64_t vocab = 0;
  uint32_t max_context = 0;  // 0: unknown
  std::string vocab_from;    // without the socket: "--vocab", "GET /v1/models" or "default"
};

// GET /v1/models (any OpenAI-compatible server), with --model and --vocab
// taking precedence.
Expected<ServedFacts> http_facts(const HttpTarget& target, const Config& config) {
  ServedFacts facts;
  std::optional<ModelFacts> listed;
  auto connection = HttpConnection::connect(target);
  if (!connection) return std::move(connection).error();
  auto body = (*connection)->get("/v1/models");
  if (body) listed = parse_models(*body);
  if (!listed && config.model.empty()) {
    return make_error(Errc::kUnavailable, "no model id from GET /v1/models ({}); give --model",
                      body ? "no model listed" : body.error().to_string());
  }
  facts.model = config.model.empty() ? listed->id : config.model;
  if (config.vocab) {
    facts.vocab = *config.vocab;
    facts.vocab_from = "--vocab";
  } else if (listed && listed->vocab_size) {
    facts.vocab = *listed->vocab_size;
    facts.vocab_from = "GET /v1/models";
  } else {
    facts.vocab = kDefaultVocab;
    facts.vocab_from = "default";
  }
  if (listed && listed->max_context) {
    facts.max_context = static_cast<uint32_t>(std::min<int64_t>(*listed->max_context, UINT32_MAX));
  }
  return facts;
}

// Runs `count` requests from `prompts`, at most `parallel` at a time, each
// worker pulling the next index. Batch mode calls it once per round.
void closed_loop(Transports& transports, const std::vector<std::vector<int32_t>>& prompts,
                 size_t first, size_t count, int parallel, SteadyClock::time_point phase_start,
                 std::vector<RequestRecord>& records, Progress* progress) {
  std::atomic<size_t> next{first};
  std::vector<std::thread> workers;
  for (int w = 0; w < parallel; ++w) {
    workers.emplace_back([&, w] {
      for (size_t i = next.fetch_add(1); i < first + count; i = next.fetch_add(1)) {
        records[i] = transports.run(w, i, prompts[i], phase_start);
        if (progress) progress->add();
      }
    });
  }
  for (auto& t : workers) t.join();
}

}  // namespace

Expected<Report> run_benchmark(const Config& config) {
  if (config.input_len < 1 || config.output_len < 1) {
    return make_error(Errc::kInvalidArgument, "--input-len and --output-len must be at least 1");
  }
  if (config.batch < 1 || config.runs < 1 || config.total_requests() < 1) {
    return make_error(Errc::kInvalidArgument, "--batch, --runs and --requests must be at least 1");
  }
  if (config.concurrency && *config.concurrency < 1) {
    return make_error(Errc::kInvalidArgument, "--concurrency must be at least 1");
  }
  if (config.rate && !(*config.rate > 0)) {
    return make_error(Errc::kInvalidArgument, "--rate must be positive");
  }

  std::optional<HttpTarget> http;
  if (config.transport == Transport::kHttp) http = RS_TRY(parse_http_target(config.http_address));
  ClientOptions options;
  options.use_shm = config.transport == Transport::kShm;
  options.client_name = "ringbench";
  options.read_timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_s * 1000));
  const std::string path =
      config.socket_path.empty() ? Client::default_socket_path() : config.socket_path;

  const int total = config.total_requests();
  int parallel = 1;
  switch (config.mode()) {
    case Config::Mode::kBatch:
      parallel = config.batch;
      break;
    case Config::Mode::kClosedLoop:
      parallel = *config.concurrency;
      break;
    case Config::Mode::kOpenLoop:
      parallel = total;
      break;
  }
  // Several connections, as several clients would open; each is thread-safe
  // and carries many requests. Over HTTP the socket only asks for facts and
  // stats, and may be missing: then any OpenAI-compatible server is measured.
  const int connections = http ? 1 : std::clamp(parallel, 1, 8);
  std::vector<std::unique_ptr<Client>> clients;
  bool socket_less = http && config.no_socket;
  for (int i = 0; i < connections && !socket_less; ++i) {
    auto c = Client::connect(path, options);
    if (!c && http) {
      std::fprintf(stderr,
                   "ringbench: no ringserve socket (%s): HTTP only, the model from GET /v1/models, "
                   "no server stats\n",
                   c.error().to_string().c_str());
      socket_less = true;
      break;
    }
    if (!c) return ringserve::with_context(std::move(c).error(), path);
    clients.push_back(std::move(c).value());
  }
  if (config.transport == Transport::kShm && !clients[0]->uses_shm()) {
    return make_error(Errc::kUnsupported, "the server did not grant shared memory");
  }
  ServedFacts facts;
  if (socket_less) {
    facts = RS_TRY(http_facts(*http, config));
    http->model = facts.model;
  } else {
    const ringserve::ServerInfo& info = clients[0]->server_info();
    facts.model = info.model_name;
    facts.vocab = config.vocab.value_or(static_cast<int>(info.vocab_size));
    facts.max_context = info.max_context;
  }
  if (facts.max_context > 0 &&
      static_cast<uint32_t>(config.input_len + config.output_len) > facts.max_context) {
    return make_error(Errc::kInvalidArgument,
                      "input {} + output {} tokens exceed the server's context of {}",
                      config.input_len, config.output_len, facts.max_context);
  }
  const IdRange ids = token_id_range(facts.vocab);
  if (ids.empty()) {
    return make_error(Errc::kUnsupported, "vocabulary of {} is too small", facts.vocab);
  }
  const int32_t low = ids.low;
  const int32_t high = ids.high;

  Transports transports(config, clients, http);
  RS_TRY_STATUS(
      transports.prepare_workers(config.mode() == Config::Mode::kOpenLoop ? 1 : parallel));
  const auto warm_prompts = make_prompts(config.warmup, config.input_len, low, high, ~config.seed);
  for (size_t i = 0; i < warm_prompts.size(); ++i) {
    RequestRecord r = transports.run(0, total + i, warm_prompts[i], SteadyClock::now());
    if (!r.ok) {
      return make_error(Errc::kUnavailable, "warm-up request failed: {}{}", r.error,
                        socket_less ? fmt::format(" (prompt ids come from a vocabulary of {} ({}); "
                                                  "--vocab sets it)",
                                                  facts.vocab, facts.vocab_from)
                                    : "");
    }
  }

  auto server_stats = [&clients]() -> Expected<ringserve::ServerStats> {
    if (clients.empty()) return make_error(Errc::kUnsupported, "no socket: no server stats");
    return clients[0]->stats();
  };
  auto before = server_stats();
  const auto prompts = make_prompts(total, config.input_len, low, high, config.seed);
  std::vector<RequestRecord> records(static_cast<size_t>(total));
  const double cpu_before = cpu_seconds();
  const SteadyClock::time_point start = SteadyClock::now();
  {
    Progress progress("ringbench", total, config.progress);
    switch (config.mode()) {
      case Config::Mode::kBatch:
        for (int first = 0; first < total; first += config.batch) {
          const int count = std::min(config.batch, total - first);
          closed_loop(transports, prompts, static_cast<size_t>(first), static_cast<size_t>(count),
                      count, start, records, &progress);
        }
        break;
      case Config::Mode::kClosedLoop:
        closed_loop(transports, prompts, 0, static_cast<size_t>(total), parallel, start, records,
                    &progress);
        break;
      case Config::Mode::kOpenLoop: {
        const std::vector<double> at = poisson_arrivals(total, *config.rate, config.seed);
        std::vector<std::thread> inflight;
        for (size_t i = 0; i < at.size(); ++i) {
          std::this_thread::sleep_until(start + std::chrono::duration_cast<SteadyClock::duration>(
                                                    std::chrono::duration<double>(at[i])));
          inflight.emplace_back([&, i] {
            records[i] = transports.run(http ? -1 : static_cast<int>(i), i, prompts[i], start);
            progress.add();
          });
        }
        for (auto& t : inflight) t.join();
        break;
      }
    }
  }
  const double wall_s = std::chrono::duration<double>(SteadyClock::now() - start).count();
  const double cpu_s = cpu_seconds() - cpu_before;
  std::vector<double> round_trips = transports.round_trips_us(kRoundTrips);

  Report report;
  report.config = config;
  report.summary = summarize(records, wall_s);
  report.summary.round_trip_us = distribution(std::move(round_trips));
  if (report.summary.output_tokens > 0) {
    report.summary.client_cpu_us_per_token =
        cpu_s * 1e6 / static_cast<double>(report.summary.output_tokens);
  }
  report.machine = machine_json();
  report.server["model"] = facts.model;
  if (socket_less) {
    report.server["facts_from"] = "GET /v1/models";
    report.server["prompt_vocab"] = facts.vocab;
    report.server["prompt_vocab_from"] = facts.vocab_from;
  }
  if (auto after = server_stats()) {
    report.server = stats_json(*after);
    report.server["model"] = facts.model;
    // This run's steps only: the server's counters are cumulative.
    if (before && before->batch_size_histogram.size() == after->batch_size_histogram.size()) {
      std::vector<uint64_t> delta = after->batch_size_histogram;
      for (size_t i = 0; i < delta.size(); ++i) delta[i] -= before->batch_size_histogram[i];
      report.server["batch_size_histogram"] = delta;
      report.server["steps_total"] = after->steps_total - before->steps_total;
      // Mean step time of this run's steps (the server's mean is cumulative).
      const double steps = static_cast<double>(after->steps_total - before->steps_total);
      if (steps > 0) {
        report.server["run_mean_step_us"] =
            (static_cast<double>(after->mean_step_us) * static_cast<double>(after->steps_total) -
             static_cast<double>(before->mean_step_us) * static_cast<double>(before->steps_total)) /
            steps;
      }
    }
  }
  return report;
}

}  // namespace ringbench
