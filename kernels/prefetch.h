// Warming L2 with bytes a later kernel will read: a hint, with no output.
// The decode step's small GEMVs (o_proj, the next layer's qkv) are too short
// to reach DRAM bandwidth on their own (a DRAM latency and a tail each, for
// 13-16 MB), while attention before them leaves DRAM nearly idle; a prefetch
// on a side stream during attention moves their weights then, and the GEMV
// reads them from L2.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#ifndef __CUDACC__
#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

// At most this many ranges per launch.
inline constexpr int kMaxPrefetchRanges = 4;

struct PrefetchRange {
  const void* ptr = nullptr;
  size_t bytes = 0;
};

struct PrefetchArgs {
  PrefetchRange ranges[kMaxPrefetchRanges];
  int count = 0;
};

#ifndef __CUDACC__
// Asks L2 to hold the ranges (evict-last priority, so the GEMVs' own
// streaming loads do not push them out first). Memory is never written and
// never read into registers; ranges need no alignment. Errors:
// kInvalidArgument (count out of range, a null pointer with bytes > 0).
Status prefetch_l2(const PrefetchArgs& args, cudaStream_t stream);
#endif

namespace detail {
cudaError_t prefetch_l2_launch(const PrefetchArgs& args, cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
