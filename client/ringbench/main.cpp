// ringbench: the load generator the project's numbers are measured with.
//
//   ringbench --input-len 512 --output-len 256 --batch 1 --runs 10
//   ringbench --concurrency 8 --requests 64 --transport socket --json out.json
//   ringbench --rate 2.5 --requests 100            (Poisson arrivals)
//   ringbench compare A.json B.json
//
// Prompts are token ids of exactly --input-len (seeded), and every request
// generates exactly --output-len tokens (ignore_eos), so runs compare.
// Exit status: 0 all requests succeeded, 1 some failed or the run could not
// start, 2 bad usage.
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>

#include "compare.h"
#include "config.h"
#include "runner.h"

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
  app.add_option("--transport", transport, "shm (socket + shared-memory ring) or socket")
      ->check(CLI::IsMember({"shm", "socket"}))
      ->capture_default_str();
  app.add_option("--warmup", config.warmup, "Unmeasured requests sent first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", config.seed, "Seed of the prompts and arrival times")
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
  config.transport =
      transport == "socket" ? ringbench::Transport::kSocket : ringbench::Transport::kShm;
  config.progress = !no_progress;
  auto report = ringbench::run_benchmark(config);
  if (!report) {
    std::fprintf(stderr, "ringbench: %s\n", report.error().to_string().c_str());
    return 1;
  }
  std::fputs(ringbench::format_table(*report).c_str(), stdout);
  if (!config.json_path.empty()) {
    std::ofstream out(config.json_path);
    out << ringbench::report_json(*report).dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "ringbench: cannot write %s\n", config.json_path.c_str());
      return 1;
    }
  }
  return report->summary.requests_failed == 0 ? 0 : 1;
}
