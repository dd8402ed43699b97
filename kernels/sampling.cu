#include "sampling.h"
#include "sampling_candidates.cuh"

namespace ringserve::kernels {
namespace {

using detail::ArgMax;
using detail::better;
using detail::block_argmax;
using detail::block_exclusive_scan;
using detail::weight;

constexpr int kThreads = 1024;
static_assert(kThreads == detail::kSortThreads);
constexpr int kPartialThreads = 256;
static_assert(kHeadSlices <= kThreads);

// Largest key tau (float bits of p >= 0) with W(keys >= tau) >= target, where
// W counts elements (by_mass false) or sums fixed-point mass. Returns tau and
// W(keys > tau).
__device__ void radix_select(const float* p, int V, bool by_mass, uint64_t target, uint32_t& tau,
                             uint64_t& above, unsigned long long* hist, uint32_t* shared_state) {
  uint32_t prefix = 0, mask = 0;
  uint64_t acc = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kThreads) hist[i] = 0;
    __syncthreads();
    // Most of a 152k vocabulary lands in a handful of bins: lanes with the
    // same bin first sum their weights (in 21-bit pieces, so 32 lanes cannot
    // overflow a 32-bit reduction) and one of them does the atomic.
    for (int base = 0; base < V; base += kThreads) {
      const int i = base + threadIdx.x;
      const float pv = i < V ? p[i] : 0.0f;
      const uint32_t key = __float_as_uint(pv);
      const bool in = i < V && (key & mask) == prefix;
      const uint32_t bin = in ? (key >> shift) & 255u : 256u;
      const uint32_t peers = __match_any_sync(0xffffffffu, bin);
      const uint64_t w = in ? (by_mass ? weight(pv) : 1ull) : 0ull;
      const uint32_t p0 = __reduce_add_sync(peers, static_cast<uint32_t>(w & 0x1fffff));
      const uint32_t p1 = __reduce_add_sync(peers, static_cast<uint32_t>((w >> 21) & 0x1fffff));
      const uint32_t p2 = __reduce_add_sync(peers, static_cast<uint32_t>(w >> 42));
      const int leader = __ffs(peers) - 1;
      if (in && static_cast<int>(threadIdx.x % 32) == leader)
        atomicAdd(&hist[bin], static_cast<unsigned long long>(p0) +
                                  (static_cast<unsigned long long>(p1) << 21) +
                                  (static_cast<unsigned long long>(p2) << 42));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t cum = acc;
      int sel = 0;
      for (int bin = 255; bin >= 0; --bin) {
        if (cum + hist[bin] >= target) {
          sel = bin;
          break;
        }
        cum += hist[bin];
      }
      shared_state[0] = prefix | (static_cast<uint32_t>(sel) << shift);
      reinterpret_cast<uint64_t*>(shared_state + 2)[0] = cum;
    }
    __syncthreads();
    prefix = shared_state[0];
    acc = reinterpret_cast<uint64_t*>(shared_state + 2)[0];
    mask |= 255u << shift;
    __syncthreads();
  }
  tau = prefix;
  above = acc;
}

// Keeps keys > tau and the first `need` keys == tau in id order; zeroes the
// rest of p. Threads own contiguous id ranges so "first" is well defined.
__device__ void keep_top(float* p, int V, uint32_t tau, uint64_t need, uint64_t* scan_scratch) {
  const int chunk = (V + kThreads - 1) / kThreads;
  const int begin = min(V, static_cast<int>(threadIdx.x) * chunk), end = min(V, begin + chunk);
  uint64_t eq = 0;
  for (int i = begin; i < end; ++i) eq += __float_as_uint(p[i]) == tau;
  uint64_t total;
  uint64_t rank = block_exclusive_scan(eq, scan_scratch, total);
  for (int i = begin; i < end; ++i) {
    const uint32_t key = __float_as_uint(p[i]);
    if (key > tau) continue;
    if (key == tau && rank < need) {
      ++rank;
      continue;
    }
    if (key == tau) ++rank;
    p[i] = 0.0f;
  }
  __syncthreads();
}

// The head's hi and lo halves summed in place (row b += row batch + b), and
// per slice of the vocabulary its largest logit (lowest id on ties) and the
// sum of exp(logit - that maximum): the two passes over the logits that
// every sampled token needs, spread over kHeadSlices blocks a row instead
// of the one block that samples.
__global__ void __launch_bounds__(kPartialThreads)
    head_partials_kernel(float* __restrict__ logits, int V, int batch,
                         SamplingRowScratch* __restrict__ rows, bool zero_histograms) {
  __shared__ float fred[32];
  __shared__ ArgMax ared[32];
  const int b = blockIdx.y, slice = blockIdx.x;
  SamplingRowScratch& row = rows[b];
  if (zero_histograms) {
    // The next kernel (mass_histogram_kernel) adds into them.
    constexpr int kPer = (kMassBins + kHeadSlices - 1) / kHeadSlices;
    for (int i = slice * kPer + threadIdx.x; i < min(kMassBins, (slice + 1) * kPer);
         i += kPartialThreads) {
      row.bin_count[i] = 0;
      row.bin_mass[i] = 0;
    }
    if (slice == 0 && threadIdx.x == 0) row.n_candidates = 0;
  }
  int begin, end;
  detail::slice_range(V, slice, begin, end);
  float* hi = logits + static_cast<size_t>(b) * V;
  const float* lo = logits + static_cast<size_t>(batch + b) * V;
  ArgMax best{-INFINITY, 0x7fffffff};
  for (int i = begin + threadIdx.x; i < end; i += kPartialThreads) {
    const float v = hi[i] + lo[i];
    hi[i] = v;
    best = better(best, ArgMax{v, i});
  }
  best = block_argmax(best, ared);
  float z = 0.0f;
  if (best.v > -INFINITY)
    for (int i = begin + threadIdx.x; i < end; i += kPartialThreads) z += expf(hi[i] - best.v);
  z = detail::block_sum(z, fred);
  if (threadIdx.x == 0) row.partials[slice] = HeadPartial{best.v, best.i, z};
}

// The sampling block's shared work space: the one-block selects' histogram,
// and with kCandidates the candidates' sort, which never overlap.
template <bool kCandidates>
struct SampleWork {
  unsigned long long hist[256];
};
template <>
struct SampleWork<true> {
  union {
    unsigned long long hist[256];
    detail::BinPrefix prefix;  // the plan's, done with before the sort
    detail::CandidateSort::TempStorage sort;
  };
  detail::RegionPlan plan;
  int result;
};

// One block a row: the greedy token, a sampled row's draw (from the
// candidates or the id-order slice where kCandidates allows, else over the
// whole vocabulary), the log-probabilities. rows: null when no
// head_partials_kernel ran (then kCandidates is false).
template <bool kCandidates>
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* __restrict__ logits, int ld, int V,
                  const SamplingSlot* __restrict__ slots, float* __restrict__ scratch,
                  SamplingRowScratch* __restrict__ rows, SampleResult* __restrict__ results) {
  __shared__ float fred[32];
  __shared__ ArgMax ared[32];
  __shared__ SampleWork<kCandidates> work;
  unsigned long long* hist = work.hist;
  __shared__ uint64_t scan_scratch[32];
  __shared__ uint64_t shared_u64[2];
  __shared__ uint32_t state[4];
  __shared__ int32_t picked;

  const int b = blockIdx.x;
  const float* l = logits + static_cast<size_t>(b) * ld;
  float* p = scratch + static_cast<size_t>(b) * V;
  const SamplingSlot s = slots[b];

  // The maximum (the greedy token) and the log-sum-exp: merged from the
  // slices' partials when head_partials_kernel ran, else two passes here.
  ArgMax best{-INFINITY, 0x7fffffff};
  float z = 0.0f;
  if (rows) {
    const HeadPartial* pr = rows[b].partials;
    const HeadPartial mine =
        threadIdx.x < kHeadSlices ? pr[threadIdx.x] : HeadPartial{-INFINITY, 0x7fffffff, 0.0f};
    best = block_argmax(ArgMax{mine.m, mine.i}, ared);
    if (mine.m > -INFINITY) z = mine.z * expf(mine.m - best.v);
  } else {
    for (int i = threadIdx.x; i < V; i += kThreads) best = better(best, ArgMax{l[i], i});
    best = block_argmax(best, ared);
    for (int i = threadIdx.x; i < V; i += kThreads) z += expf(l[i] - best.v);
  }
  z = detail::block_sum(z, fred);
  const float m = best.v;
  const float lse = m + logf(z);

  int token = best.i;
  SampleRoute route = SampleRoute::kGreedy;
  const float inv_t = 1.0f / s.temperature;
  if constexpr (kCandidates) {
    if (samples(s)) {
      detail::plan_region(rows[b], s, V, work.prefix, scan_scratch, &work.result, work.plan);
      const uint32_t n = rows[b].n_candidates;
      if (work.plan.id_order) {
        if (threadIdx.x == 0) picked = best.i;  // only if no token has mass
        __syncthreads();
        detail::draw_in_id_order(rows[b], l, V, s, m, inv_t, scan_scratch, shared_u64, &picked);
        token = picked;
        route = SampleRoute::kIdOrder;
      } else if (work.plan.fits && n == work.plan.count) {
        const int drawn = detail::draw_from_candidates(rows[b], n, s, V, work.plan, work.sort,
                                                       scan_scratch, shared_u64);
        if (drawn >= 0) {
          token = drawn;
          route = SampleRoute::kCandidates;
        }
      }
      __syncthreads();  // picked and the shared scratch are reused below
    }
  }
  if (samples(s) && route == SampleRoute::kGreedy) {
    route = SampleRoute::kOneBlock;
    for (int i = threadIdx.x; i < V; i += kThreads) p[i] = detail::sample_prob(l[i], m, inv_t);
    __syncthreads();
    uint32_t tau;
    uint64_t above;
    if (top_k_cuts(s, V)) {
      radix_select(p, V, false, static_cast<uint64_t>(s.top_k), tau, above, hist, state);
      keep_top(p, V, tau, static_cast<uint64_t>(s.top_k) - above, scan_scratch);
    }
    if (top_p_cuts(s)) {
      uint64_t mine = 0;
      for (int i = threadIdx.x; i < V; i += kThreads) mine += weight(p[i]);
      uint64_t total;
      block_exclusive_scan(mine, scan_scratch, total);
      const uint64_t target = detail::nucleus_target(s.top_p, total);
      radix_select(p, V, true, target, tau, above, hist, state);
      const uint64_t w_tau = weight(__uint_as_float(tau));
      const uint64_t need = w_tau > 0 ? (target - above + w_tau - 1) / w_tau : 0;
      keep_top(p, V, tau, need > 0 ? need : 1, scan_scratch);
    }
    // Draw: contiguous id ranges per thread, fixed-point masses.
    const int chunk = (V + kThreads - 1) / kThreads;
    const int begin = min(V, static_cast<int>(threadIdx.x) * chunk), end = min(V, begin + chunk);
    uint64_t mine = 0;
    for (int i = begin; i < end; ++i) mine += weight(p[i]);
    uint64_t total;
    const uint64_t before = block_exclusive_scan(mine, scan_scratch, total);
    const uint64_t r = detail::draw_position(s, total);
    if (threadIdx.x == 0) picked = best.i;  // total == 0 cannot happen (max has p = 1)
    __syncthreads();
    const bool truncated = top_k_cuts(s, V) || top_p_cuts(s);
    if (truncated) {
      // Descending order: the token is the one where the most-likely-first
      // cumulative mass passes r, i.e. the selection of mass r + 1.
      radix_select(p, V, true, r + 1, tau, above, hist, state);
      const uint64_t w_tau = weight(__uint_as_float(tau));
      const uint64_t rank = w_tau > 0 ? (r + 1 - above + w_tau - 1) / w_tau - 1 : 0;
      uint64_t eq = 0;
      for (int i = begin; i < end; ++i) eq += __float_as_uint(p[i]) == tau;
      uint64_t eq_total;
      uint64_t eq_before = block_exclusive_scan(eq, scan_scratch, eq_total);
      for (int i = begin; i < end; ++i) {
        if (__float_as_uint(p[i]) != tau) continue;
        if (eq_before == rank) picked = i;
        ++eq_before;
      }
    } else if (total > 0 && r >= before && r < before + mine) {
      uint64_t cum = before;
      for (int i = begin; i < end; ++i) {
        cum += weight(p[i]);
        if (cum > r) {
          picked = i;
          break;
        }
      }
    }
    __syncthreads();
    token = picked;
  }

  SampleResult* out = results + b;
  const int n_top = min(max(s.top_logprobs, 0), kMaxTopLogprobs);
  // The k-th best is the best of the tokens after the (k-1)-th in the order
  // (logit desc, id asc): one comparison a token instead of a search of
  // those already taken.
  ArgMax last{INFINITY, -1};
  for (int k = 0; k < n_top; ++k) {
    ArgMax cand{-INFINITY, 0x7fffffff};
    for (int i = threadIdx.x; i < V; i += kThreads) {
      const float v = l[i];
      if (v < last.v || (v == last.v && i > last.i)) cand = better(cand, ArgMax{v, i});
    }
    cand = block_argmax(cand, ared);
    if (threadIdx.x == 0) {
      out->top_ids[k] = cand.i;
      out->top_logprobs[k] = cand.v - lse;
    }
    last = cand;
  }
  if (threadIdx.x == 0) {
    out->token = token;
    out->logprob = l[token] - lse;
    if (rows) rows[b].route = route;
  }
}

}  // namespace

namespace detail {

cudaError_t sample_launch(const float* logits, int ld, int batch, int vocab,
                          const SamplingSlot* slots, float* scratch, SampleResult* results,
                          cudaStream_t stream) {
  sample_kernel<false>
      <<<batch, kThreads, 0, stream>>>(logits, ld, vocab, slots, scratch, nullptr, results);
  return cudaGetLastError();
}

cudaError_t sample_halves_launch(float* logits, int batch, int vocab, const SamplingSlot* slots,
                                 float* scratch, SamplingRowScratch* rows, SampleResult* results,
                                 SampleStrategy strategy, cudaStream_t stream) {
  const bool candidates = strategy == SampleStrategy::kCandidates;
  head_partials_kernel<<<dim3(kHeadSlices, batch), kPartialThreads, 0, stream>>>(
      logits, vocab, batch, rows, candidates);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  if (candidates)
    if (const cudaError_t err = sample_candidates_launch(logits, batch, vocab, slots, rows, stream);
        err != cudaSuccess)
      return err;
  if (candidates)
    sample_kernel<true>
        <<<batch, kThreads, 0, stream>>>(logits, vocab, vocab, slots, scratch, rows, results);
  else
    sample_kernel<false>
        <<<batch, kThreads, 0, stream>>>(logits, vocab, vocab, slots, scratch, rows, results);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
