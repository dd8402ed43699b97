// `--offload auto`: choose stream or zero-copy from bandwidths measured at
// start-up. The CUDA engine measures (pinned host-to-device copy rate; the
// rate a GEMV-like kernel achieves reading mapped pinned memory; optionally
// the device's own read rate); this file only decides, so it is testable.
#pragma once

#include <string>

#include "offload/plan.h"
#include "ringserve/common/expected.h"

namespace ringserve::offload {

struct LinkMeasurement {
  double h2d_gbps = 0.0;       // cudaMemcpyAsync from pinned memory, GB/s (1e9 B/s)
  double zerocopy_gbps = 0.0;  // kernel reads of mapped pinned memory, GB/s
  double device_gbps = 0.0;    // HBM read rate; 0 = unknown (compute time ignored)
};

struct AutoDecision {
  Strategy strategy = Strategy::kStream;
  Plan plan;                   // the chosen strategy's plan
  double stream_step_s = 0.0;  // predicted decode step, batch 1; <0: plan refused
  double zerocopy_step_s = 0.0;
  std::string reason;  // one log line with both predictions
};

// Predicted batch-1 decode step for a plan:
//   stream:   max(streamed / h2d, all weights / device): the copy stream runs
//             ahead of compute, so the slower of the two sets the pace;
//   zerocopy: resident weights / device + streamed / zerocopy: the kernels of
//             a zero-copy layer are the only work in flight while they read
//             across the link, so nothing hides that time.
double predicted_step_seconds(const Plan& plan, const LinkMeasurement& m);

// Plans both strategies for `base` (its strategy is ignored) and picks the
// one with the shorter predicted step; a refused plan loses; a tie, or no
// layer streaming, goes to stream (kernels then read only HBM).
// Errors: kInvalidArgument for non-positive or non-finite link rates; the
// zero-copy plan's error when neither plan fits (it needs the least memory).
Expected<AutoDecision> decide_offload(const ModelFootprint& footprint, const PlanRequest& base,
                                      const LinkMeasurement& measured);

}  // namespace ringserve::offload
