// `ringctl stats`: the server's counters and recent latencies.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"

namespace ringctl {
namespace {

nlohmann::json to_json(const ringserve::ServerStats& s) {
  return {{"engine", s.engine},
          {"uptime_s", static_cast<double>(s.uptime_us) / 1e6},
          {"sessions", s.sessions},
          {"requests_total", s.requests_total},
          {"requests_active", s.requests_active},
          {"queue_depth", s.queue_depth},
          {"prompt_tokens_total", s.prompt_tokens_total},
          {"completion_tokens_total", s.completion_tokens_total},
          {"steps_total", s.steps_total},
          {"mean_step_us", s.mean_step_us},
          {"batch_size_histogram", s.batch_size_histogram},
          {"kv_blocks_used", s.kv_blocks_used},
          {"kv_blocks_total", s.kv_blocks_total},
          {"ttft_p50_us", s.ttft_p50_us},
          {"ttft_p99_us", s.ttft_p99_us},
          {"itl_p50_us", s.itl_p50_us},
          {"itl_p99_us", s.itl_p99_us}};
}

int run(const ConnectArgs& connect_args, bool json) {
  auto client = connect(connect_args);
  if (!client) {
    std::fprintf(stderr, "ringctl: %s\n", client.error().to_string().c_str());
    return 1;
  }
  auto stats = (*client)->stats();
  if (!stats) {
    std::fprintf(stderr, "ringctl: %s\n", stats.error().to_string().c_str());
    return 1;
  }
  const ringserve::ServerStats& s = *stats;
  if (json) {
    std::printf("%s\n", to_json(s).dump().c_str());
    return 0;
  }
  const auto& info = (*client)->server_info();
  std::printf("model            %s (%s engine)\n", info.model_name.c_str(), s.engine.c_str());
  std::printf("uptime           %.1f s, %u sessions\n", static_cast<double>(s.uptime_us) / 1e6,
              s.sessions);
  std::printf("requests         %llu total, %u running, %u queued\n",
              static_cast<unsigned long long>(s.requests_total), s.requests_active, s.queue_depth);
  std::printf("tokens           %llu prompt, %llu generated\n",
              static_cast<unsigned long long>(s.prompt_tokens_total),
              static_cast<unsigned long long>(s.completion_tokens_total));
  std::printf("steps            %llu, mean %.2f ms\n",
              static_cast<unsigned long long>(s.steps_total),
              static_cast<double>(s.mean_step_us) / 1000.0);
  std::printf("KV blocks        %u / %u used\n", s.kv_blocks_used, s.kv_blocks_total);
  std::printf("TTFT             p50 %.2f ms, p99 %.2f ms\n", s.ttft_p50_us / 1000.0,
              s.ttft_p99_us / 1000.0);
  std::printf("inter-token      p50 %.2f ms, p99 %.2f ms\n", s.itl_p50_us / 1000.0,
              s.itl_p99_us / 1000.0);
  std::printf("batch sizes      ");
  for (size_t i = 1; i < s.batch_size_histogram.size(); ++i) {
    std::printf("%zu:%llu ", i, static_cast<unsigned long long>(s.batch_size_histogram[i]));
  }
  std::printf("(steps per number of sequences)\n");
  return 0;
}

}  // namespace

void add_stats_command(CLI::App& app, const ConnectArgs& connect, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("stats", "Show the server's counters and latencies");
  sub->add_flag("--json", *json, "One JSON object");
  sub->callback([json, &connect, &exit_code] { exit_code = run(connect, *json); });
}

}  // namespace ringctl
