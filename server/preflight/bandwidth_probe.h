// A short, bounded host<->GPU copy benchmark (pinned and pageable, both
// directions) through the CUDA runtime. Built from bandwidth_probe_cuda.cpp
// when the build has CUDA, from bandwidth_probe_none.cpp otherwise.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "preflight/report.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

struct ProbeOptions {
  std::string bdf;                   // the GPU to probe
  size_t bytes = size_t{256} << 20;  // per copy, capped at 1 GiB
  int iterations = 4;                // per direction and memory kind, capped at 32
  // Called once while pinned H2D copies are in flight: the link is then
  // loaded, which is when its speed and width mean something.
  std::function<void()> during_load;
};

// Whether this build can run the probe at all.
bool bandwidth_probe_built();

// kUnsupported without CUDA; kUnavailable when no device matches `bdf`.
Expected<BandwidthResult> run_bandwidth_probe(const ProbeOptions& options);

}  // namespace ringserve::preflight
