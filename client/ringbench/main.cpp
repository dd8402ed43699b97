// ringbench: the load generator the project's numbers are measured with.
//
//   ringbench --input-len 512 --output-len 256 --batch 1 --runs 10
//   ringbench --concurrency 8 --requests 64 --transport socket --json out.json
//   ringbench --rate 2.5 --requests 100            (Poisson arrivals)
//   ringbench --transport http --http 127.0.0.1:8080 --concurrency 4 --requests 32
//   ringbench --transport all --http 127.0.0.1:8080 --json out.json
//                     (shm, socket and http one after another, side by side;
//                      writes out-shm.json, out-socket.json, out-http.json)
//   ringbench --transport http --http 127.0.0.1:8000 --no-socket --vocab 151936
//                     (any OpenAI-compatible server: llama.cpp, vLLM, SGLang...)
//   ringbench compare A.json B.json
//
// Prompts are token ids of exactly --input-len (seeded), and every request
// generates exactly --output-len tokens (ignore_eos), so runs compare;
// greedy unless --temperature (with --top-p, --top-k), each request seeded.
// Where the token ids come back, the results carry a digest of them, which
// tells whether two runs generated the same tokens.
// Exit status: 0 all requests succeeded, 1 some failed or the run could not
// start, 2 bad usage.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <CLI/CLI.hpp>

#include "compare.h"
#include "config.h"
#include "runner.h"

namespace {

bool write_json(const ringbench::Report& report, const std::string& path) {
  std::ofstream out(path);
  out << ringbench::report_json(report).dump(2) << "\n";
  if (!out) {
    std::fprintf(stderr, "ringbench: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

// out.json -> out-http.json
std::string with_suffix(const std::string& path, const char* suffix) {
  std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "-" + suffix + p.extension().string())).string();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ringbench: load generator for ringserve"};
  ringbench::Config config;
  app.add_option("--socket", config.socket_path, "Server socket (default: the server's default)");
  app.add_option("--input-len", config.input_len, "Prompt tokens per request")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--output-len", config.output_len, "Generated tokens per request")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", config.batch, "Requests sent together per run (batch mode)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--runs", config.runs, "Rounds of --batch requests")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  int concurrency = 0, requests = 0;
  double rate = 0;
  auto* concurrency_opt = app.add_option("--concurrency", concurrency,
                                         "Closed loop: this many requests in flight at all times")
                              ->check(CLI::PositiveNumber);
  auto* requests_opt =
      app.add_option("--requests", requests, "Total measured requests (closed/open loop)")
          ->check(CLI::PositiveNumber);
  auto* rate_opt =
      app.add_option("--rate", rate, "Open loop: Poisson arrivals at this many requests/s")
          ->check(CLI::PositiveNumber);
  rate_opt->excludes(concurrency_opt);
  std::string transport = "shm";
  app.add_option("--transport", transport,
                 "shm (socket + shared-memory ring), socket, http (HTTP+JSON, SSE), or all "
                 "(the three in turn, side by side)")
      ->check(CLI::IsMember({"shm", "socket", "http", "all"}))
      ->capture_default_str();
  app.add_option("--http", config.http_address,
                 "HOST:PORT of the server's HTTP API (`serve --http`), for --transport http|all")
      ->capture_default_str();
  app.add_flag("--no-socket", config.no_socket,
               "--transport http: do not use ringserve's socket (also the fallback when it is "
               "not reachable); the model comes from GET /v1/models, no server stats");
  int vocab = 0;
  auto* vocab_opt = app.add_option("--vocab", vocab,
                                   "Prompt ids are drawn from this vocabulary size (default: the "
                                   "server's; without the socket, /v1/models' if it says, else "
                                   "32000)")
                        ->check(CLI::PositiveNumber);
  app.add_option("--model", config.model,
                 "Without the socket: the \"model\" to send (default: the first of /v1/models)");
  app.add_option("--warmup", config.warmup, "Unmeasured requests sent first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", config.seed,
                 "Seed of the prompts, arrival times and (when sampled) each request's draws")
      ->capture_default_str();
  app.add_option("--temperature", config.temperature,
                 "Sample at this temperature (default 0: greedy); each request gets its own seed "
                 "from --seed, so a run repeats")
      ->check(CLI::Range(0.0f, 100.0f))
      ->capture_default_str();
  app.add_option("--top-p", config.top_p, "With --temperature: nucleus mass, in (0, 1]")
      ->check(CLI::Range(0.0f, 1.0f))
      ->capture_default_str();
  app.add_option("--top-k", config.top_k,
                 "With --temperature: keep the k likeliest tokens (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--json", config.json_path, "Write the results as JSON to this file");
  app.add_option("--label", config.label, "Free text stored with the results (e.g. 'adaptive')");
  app.add_option("--timeout", config.timeout_s, "Seconds to wait for a request's next event")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "Do not draw the progress bar");

  auto* compare = app.add_subcommand("compare", "Two JSON results side by side, with ratios");
  std::string file_a, file_b;
  compare->add_option("A", file_a, "Baseline JSON")->required()->check(CLI::ExistingFile);
  compare->add_option("B", file_b, "Candidate JSON")->required()->check(CLI::ExistingFile);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (*compare) {
    auto a = ringbench::load_report(file_a);
    auto b = ringbench::load_report(file_b);
    for (const auto* r : {&a, &b}) {
      if (!*r) {
        std::fprintf(stderr, "ringbench: %s\n", r->error().to_string().c_str());
        return 1;
      }
    }
    std::fputs(ringbench::format_comparison(*a, *b, file_a, file_b).c_str(), stdout);
    return 0;
  }

  if (*concurrency_opt) config.concurrency = concurrency;
  if (*requests_opt) config.requests = requests;
  if (*rate_opt) config.rate = rate;
  if (*vocab_opt) config.vocab = vocab;
  if (config.top_p <= 0.0f) {
    std::fprintf(stderr, "ringbench: --top-p must be in (0, 1]\n");
    return 2;
  }
  if (config.temperature <= 0.0f && (config.top_p < 1.0f || config.top_k > 0)) {
    std::fprintf(stderr, "ringbench: --top-p and --top-k shape sampling: give --temperature too\n");
    return 2;
  }
  config.progress = !no_progress;
  std::vector<ringbench::Transport> transports;
  if (transport == "all") {
    transports = {ringbench::Transport::kShm, ringbench::Transport::kSocket,
                  ringbench::Transport::kHttp};
  } else if (transport == "socket") {
    transports = {ringbench::Transport::kSocket};
  } else if (transport == "http") {
    transports = {ringbench::Transport::kHttp};
  } else {
    transports = {ringbench::Transport::kShm};
  }

  std::vector<ringbench::Report> reports;
  int failed = 0;
  for (ringbench::Transport t : transports) {
    config.transport = t;
    auto report = ringbench::run_benchmark(config);
    if (!report) {
      std::fprintf(stderr, "ringbench: %s: %s\n", ringbench::transport_name(t),
                   report.error().to_string().c_str());
      return 1;
    }
    std::fputs(ringbench::format_table(*report).c_str(), stdout);
    if (transports.size() > 1) std::fputc('\n', stdout);
    if (!config.json_path.empty()) {
      const std::string path = transports.size() > 1
                                   ? with_suffix(config.json_path, ringbench::transport_name(t))
                                   : config.json_path;
      if (!write_json(*report, path)) return 1;
    }
    failed += report->summary.requests_failed;
    reports.push_back(std::move(report).value());
  }
  if (reports.size() > 1) std::fputs(ringbench::format_transport_table(reports).c_str(), stdout);
  return failed == 0 ? 0 : 1;
}
