// The build without CUDA: the probe reports that it cannot run, and the
// report says so instead of inventing numbers.
#include "preflight/bandwidth_probe.h"

namespace ringserve::preflight {

bool bandwidth_probe_built() {
  return false;
}

Expected<BandwidthResult> run_bandwidth_probe(const ProbeOptions&) {
  return make_error(Errc::kUnsupported, "this build has no CUDA: bandwidth not measured");
}

}  // namespace ringserve::preflight
