// Measures the host-to-device link at start-up, for `--offload auto` and
// for the log: the pinned copy rate (what the stream strategy gets) and the
// rate at which a kernel reads mapped pinned memory (what zero-copy gets).
#pragma once

#include <cuda_runtime_api.h>

#include "offload/auto_choice.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

// About 0.1 s: each rate is the best of a few 256 MiB transfers.
Expected<offload::LinkMeasurement> measure_link(cudaStream_t stream);

}  // namespace ringserve::cuda
