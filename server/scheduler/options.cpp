#include "scheduler/options.h"

#include <map>
#include <string>

namespace ringserve::serve {

Expected<BatchPolicy> parse_batch_policy(std::string_view text) {
  if (text == "window") return BatchPolicy::kWindow;
  if (text == "adaptive") return BatchPolicy::kAdaptive;
  return make_error(Errc::kInvalidArgument, "unknown batch policy '{}' (window or adaptive)", text);
}

const char* batch_policy_name(BatchPolicy policy) {
  return policy == BatchPolicy::kAdaptive ? "adaptive" : "window";
}

Status validate(const SchedulerOptions& options) {
  if (options.max_batch < 1 || options.max_batch > 256) {
    return make_error(Errc::kInvalidArgument, "max batch {} is outside 1..256", options.max_batch);
  }
  if (options.batch_window.count() < 0) {
    return make_error(Errc::kInvalidArgument, "batch window must not be negative");
  }
  if (options.max_queue == 0) {
    return make_error(Errc::kInvalidArgument, "max queue must be at least 1");
  }
  if (options.latency_window == 0) {
    return make_error(Errc::kInvalidArgument, "latency window must be at least 1");
  }
  return ok();
}

void add_scheduler_flags(CLI::App& app, SchedulerOptions& options) {
  app.add_option("--max-batch", options.max_batch,
                 "Most sequences decoded together; a batch starts when this many wait")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option_function<double>(
         "--batch-window-ms",
         [&options](double ms) {
           options.batch_window = std::chrono::microseconds(static_cast<int64_t>(ms * 1000.0));
         },
         "Longest time the oldest waiting request is held before its batch starts")
      ->check(CLI::Range(0.0, 60'000.0))
      ->default_str(fmt::format("{}", options.batch_window.count() / 1000.0));
  static const std::map<std::string, BatchPolicy> kPolicies{{"window", BatchPolicy::kWindow},
                                                            {"adaptive", BatchPolicy::kAdaptive}};
  app.add_option("--batch-policy", options.policy,
                 "window: hold requests for the window; adaptive: start at once when idle")
      ->transform(CLI::CheckedTransformer(kPolicies, CLI::ignore_case))
      ->default_str(batch_policy_name(options.policy));
  app.add_option("--max-queue", options.max_queue,
                 "Waiting requests beyond this are refused with resource_exhausted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

}  // namespace ringserve::serve
