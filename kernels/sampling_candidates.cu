// The kCandidates strategy's two grid-wide passes (sampling.h): the mass
// histogram and the gather of the tokens a truncated draw can reach. Both run
// kHeadSlices blocks a row, after head_partials_kernel has the row's maximum
// and zeroed its histogram, and before the sampling block draws.
#include "sampling_candidates.cuh"

namespace ringserve::kernels {
namespace {

constexpr int kThreads = 256;

__device__ uint64_t block_sum_u64(uint64_t v, uint64_t* scratch) {
  uint64_t total;
  detail::block_exclusive_scan(v, scratch, total);
  return total;
}

// Per row that samples: the count and mass of its tokens in each bin, and
// each slice's mass (the id-order draw's index).
__global__ void __launch_bounds__(kThreads)
    mass_histogram_kernel(const float* __restrict__ logits, int V,
                          const SamplingSlot* __restrict__ slots,
                          SamplingRowScratch* __restrict__ rows) {
  __shared__ uint32_t count[kMassBins];
  __shared__ unsigned long long mass[kMassBins];
  __shared__ float fred[32];
  __shared__ uint64_t ured[32];
  const int b = blockIdx.y, slice = blockIdx.x;
  const SamplingSlot s = slots[b];
  if (!samples(s)) return;
  SamplingRowScratch& row = rows[b];
  // Only the truncated draws read the bins.
  const bool binned = top_k_cuts(s, V) || top_p_cuts(s);
  for (int i = threadIdx.x; i < kMassBins; i += kThreads) {
    count[i] = 0;
    mass[i] = 0;
  }
  const float m = detail::merged_max(row.partials, fred);  // syncs
  const float inv_t = 1.0f / s.temperature;
  const float* l = logits + static_cast<size_t>(b) * V;
  int begin, end;
  detail::slice_range(V, slice, begin, end);
  uint64_t slice_mass = 0;
  for (int i = begin + threadIdx.x; i < end; i += kThreads) {
    const float p = detail::sample_prob(l[i], m, inv_t);
    const uint64_t w = detail::weight(p);
    slice_mass += w;
    if (binned && w > 0) {
      const int bin = detail::mass_bin(__float_as_uint(p));
      atomicAdd(&count[bin], 1u);
      atomicAdd(&mass[bin], static_cast<unsigned long long>(w));
    }
  }
  slice_mass = block_sum_u64(slice_mass, ured);  // syncs: the bins are complete
  if (threadIdx.x == 0) row.slice_mass[slice] = slice_mass;
  if (!binned) return;
  for (int i = threadIdx.x; i < kMassBins; i += kThreads) {
    if (count[i] == 0) continue;
    atomicAdd(&row.bin_count[i], count[i]);
    atomicAdd(reinterpret_cast<unsigned long long*>(&row.bin_mass[i]), mass[i]);
  }
}

// Per row whose truncated draw fits: the tokens with mass in the plan's
// ranges of bins, appended in no particular order (the sampling block sorts
// them).
__global__ void __launch_bounds__(kThreads)
    gather_candidates_kernel(const float* __restrict__ logits, int V,
                             const SamplingSlot* __restrict__ slots,
                             SamplingRowScratch* __restrict__ rows) {
  __shared__ detail::BinPrefix prefix;
  __shared__ detail::RegionPlan plan;
  __shared__ float fred[32];
  __shared__ uint64_t ured[32];
  __shared__ int result;
  const int b = blockIdx.y, slice = blockIdx.x;
  const SamplingSlot s = slots[b];
  if (!samples(s)) return;
  SamplingRowScratch& row = rows[b];
  detail::plan_region(row, s, V, prefix, ured, &result, plan);
  if (plan.id_order || !plan.fits) return;
  const float m = detail::merged_max(row.partials, fred);
  const float inv_t = 1.0f / s.temperature;
  const float* l = logits + static_cast<size_t>(b) * V;
  int begin, end;
  detail::slice_range(V, slice, begin, end);
  const unsigned lane = threadIdx.x % 32;
  // Whole warps step together so each appends with one atomic.
  for (int base = begin; base < end; base += kThreads) {
    const int i = base + static_cast<int>(threadIdx.x);
    bool take = false;
    uint32_t key = 0;
    if (i < end) {
      const float p = detail::sample_prob(l[i], m, inv_t);
      key = __float_as_uint(p);
      take = detail::weight(p) > 0 && plan.range_of(detail::mass_bin(key)) >= 0;
    }
    const uint32_t ballot = __ballot_sync(0xffffffffu, take);
    if (ballot == 0) continue;
    const int leader = __ffs(ballot) - 1;
    uint32_t first = 0;
    if (static_cast<int>(lane) == leader) first = atomicAdd(&row.n_candidates, __popc(ballot));
    first = __shfl_sync(0xffffffffu, first, leader);
    if (!take) continue;
    const uint32_t at = first + __popc(ballot & ((1u << lane) - 1u));
    if (at < static_cast<uint32_t>(kMaxCandidates)) row.candidates[at] = SampleCandidate{key, i};
  }
}

}  // namespace

namespace detail {

cudaError_t sample_candidates_launch(const float* logits, int batch, int vocab,
                                     const SamplingSlot* slots, SamplingRowScratch* rows,
                                     cudaStream_t stream) {
  const dim3 grid(kHeadSlices, batch);
  mass_histogram_kernel<<<grid, kThreads, 0, stream>>>(logits, vocab, slots, rows);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  gather_candidates_kernel<<<grid, kThreads, 0, stream>>>(logits, vocab, slots, rows);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
