#include <cstdint>

#include "prefetch.h"

namespace ringserve::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kLine = 128;  // bytes per L2 prefetch (one cache line)

// Every thread walks whole lines of the ranges in a grid-stride loop. A
// prefetch does not wait for its data, so a few blocks issue all of it and
// the kernel ends long before the bytes arrive: the side stream is free at
// once and takes no SMs away from the kernels it overlaps.
__global__ void __launch_bounds__(kThreads) prefetch_l2_kernel(PrefetchArgs a) {
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  for (int r = 0; r < a.count; ++r) {
    const auto base = reinterpret_cast<uintptr_t>(a.ranges[r].ptr);
    const uintptr_t first = base / kLine, last = (base + a.ranges[r].bytes + kLine - 1) / kLine;
    for (uintptr_t line = first + blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x;
         line < last; line += stride) {
      asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(line * kLine));
    }
  }
}

}  // namespace

namespace detail {

cudaError_t prefetch_l2_launch(const PrefetchArgs& args, cudaStream_t stream) {
  size_t lines = 0;
  for (int r = 0; r < args.count; ++r) lines += args.ranges[r].bytes / kLine + 2;
  // About 16 lines per thread: enough threads to issue quickly, few blocks.
  const size_t want = (lines + 16 * kThreads - 1) / (16 * kThreads);
  const int blocks = static_cast<int>(want < 1 ? 1 : want > 64 ? 64 : want);
  prefetch_l2_kernel<<<blocks, kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
