// Drives the load against a server through the client SDK (or HTTP) and measures each
// request on the client's clock (plus the server's timings from Done).
#pragma once

#include "config.h"
#include "results.h"
#include "ringserve/client/client.h"
#include "ringserve/common/expected.h"

namespace ringbench {

ringserve::Expected<Report> run_benchmark(const Config& config);

}  // namespace ringbench
