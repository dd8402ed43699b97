// NVML, when the driver's libnvidia-ml.so.1 is present at run time. It is
// loaded with dlopen and never linked, so the build needs no NVIDIA package.
#pragma once

#include <string>

#include "preflight/report.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

// kUnavailable when the library or the device is not there.
Expected<NvmlLink> nvml_query_link(const std::string& bdf);

}  // namespace ringserve::preflight
