#include "prefetch.h"

#include "cuda_check.h"

namespace ringserve::kernels {

Status prefetch_l2(const PrefetchArgs& args, cudaStream_t stream) {
  if (args.count < 0 || args.count > kMaxPrefetchRanges)
    return make_error(Errc::kInvalidArgument, "prefetch_l2: {} ranges (at most {})", args.count,
                      kMaxPrefetchRanges);
  size_t total = 0;
  for (int i = 0; i < args.count; ++i) {
    if (!args.ranges[i].ptr && args.ranges[i].bytes > 0)
      return make_error(Errc::kInvalidArgument, "prefetch_l2: range {} is null", i);
    total += args.ranges[i].bytes;
  }
  if (total == 0) return ok();
  CUDA_CHECK(detail::prefetch_l2_launch(args, stream));
  return ok();
}

}  // namespace ringserve::kernels
