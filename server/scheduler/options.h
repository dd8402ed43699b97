// Knobs of the dynamic batcher, and their command-line flags.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

#include <CLI/CLI.hpp>

#include "ringserve/common/expected.h"

namespace ringserve::serve {

enum class BatchPolicy {
  // A batch starts when enough requests wait to fill the free slots, or when
  // the oldest waiting one has waited the window (the product card's rule).
  kWindow,
  // As kWindow, but a request that arrives while nothing runs starts at once:
  // holding it would only add the window to its latency.
  kAdaptive,
};

Expected<BatchPolicy> parse_batch_policy(std::string_view text);
const char* batch_policy_name(BatchPolicy policy);

struct SchedulerOptions {
  int max_batch = 4;  // running sequences at most; also the "batch is full" count
  std::chrono::microseconds batch_window{10'000};
  BatchPolicy policy = BatchPolicy::kWindow;
  // Waiting requests beyond this are refused (kResourceExhausted), so a flood
  // of clients cannot grow the queue without bound.
  size_t max_queue = 1024;
  // Stop strings are matched on the engine thread; bound their cost.
  size_t max_stop_strings = 16;
  size_t max_stop_string_bytes = 256;
  // Samples kept for the TTFT / inter-token latency percentiles in Stats.
  size_t latency_window = 2048;
};

Status validate(const SchedulerOptions& options);

// Registers --max-batch, --batch-window-ms, --batch-policy on `app`. The
// values land in `options` when the app is parsed.
void add_scheduler_flags(CLI::App& app, SchedulerOptions& options);

}  // namespace ringserve::serve
