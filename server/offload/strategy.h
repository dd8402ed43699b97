// How layers that do not fit in GPU memory reach the kernels (--offload).
#pragma once

#include <string_view>

#include "ringserve/common/expected.h"

namespace ringserve::offload {

enum class Strategy {
  // A copy stream moves each streamed layer host-to-device into a ring of
  // layer-sized device buffers ahead of its compute; kernels read HBM.
  kStream,
  // Kernels read the streamed layers straight from mapped pinned host
  // memory: no ring buffers, but every read crosses the link at the rate
  // the kernels' access pattern achieves.
  kZeroCopy,
};

// The flag's value: a strategy, or "auto" (decided by measurement at start-up).
enum class OffloadMode { kStream, kZeroCopy, kAuto };

const char* strategy_name(Strategy s);  // "stream", "zerocopy"
const char* offload_mode_name(OffloadMode m);

// "stream" | "zerocopy" | "zero-copy" | "auto" (case-sensitive, as flags are).
Expected<OffloadMode> parse_offload_mode(std::string_view text);

}  // namespace ringserve::offload
