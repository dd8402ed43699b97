#include "common.cuh"
#include "sampling.h"

namespace ringserve::kernels {
namespace {

constexpr int kThreads = 1024;
constexpr int kPartialThreads = 256;
static_assert(kHeadSlices <= kThreads);
constexpr float kFixedOne = 1099511627776.0f;  // 2^40

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ uint64_t weight(float p) {
  return __float2ull_rz(p * kFixedOne);
}

struct ArgMax {
  float v;
  int i;
};

__device__ __forceinline__ ArgMax better(ArgMax a, ArgMax b) {
  if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;
  return a;
}

__device__ ArgMax block_argmax(ArgMax a, ArgMax* scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    ArgMax b{__shfl_xor_sync(0xffffffffu, a.v, o), __shfl_xor_sync(0xffffffffu, a.i, o)};
    a = better(a, b);
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = a;
  __syncthreads();
  a = threadIdx.x < blockDim.x / 32 ? scratch[threadIdx.x] : ArgMax{-INFINITY, 0x7fffffff};
  if (threadIdx.x < 32) {
    for (int o = 16; o > 0; o >>= 1) {
      ArgMax b{__shfl_xor_sync(0xffffffffu, a.v, o), __shfl_xor_sync(0xffffffffu, a.i, o)};
      a = better(a, b);
    }
    if (threadIdx.x == 0) scratch[0] = a;
  }
  __syncthreads();
  return scratch[0];
}

// Exclusive prefix sum over the block (thread order); also returns the total.
__device__ uint64_t block_exclusive_scan(uint64_t v, uint64_t* scratch, uint64_t& total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint64_t inc = v;
  for (int o = 1; o < 32; o <<= 1) {
    const uint64_t y = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += y;
  }
  __syncthreads();
  if (lane == 31) scratch[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    uint64_t w = scratch[lane];
    for (int o = 1; o < 32; o <<= 1) {
      const uint64_t y = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += y;
    }
    scratch[lane] = w;  // inclusive over warps
  }
  __syncthreads();
  total = scratch[31];
  const uint64_t before = warp > 0 ? scratch[warp - 1] : 0;
  return before + inc - v;
}

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
                         HeadPartial* __restrict__ partials) {
  __shared__ float fred[32];
  __shared__ ArgMax ared[32];
  const int b = blockIdx.y, slice = blockIdx.x;
  const int per = (V + kHeadSlices - 1) / kHeadSlices;
  const int begin = min(V, slice * per), end = min(V, begin + per);
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
  if (threadIdx.x == 0) partials[b * kHeadSlices + slice] = HeadPartial{best.v, best.i, z};
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* __restrict__ logits, int ld, int V,
                  const SamplingSlot* __restrict__ slots, float* __restrict__ scratch,
                  const HeadPartial* __restrict__ partials, SampleResult* __restrict__ results) {
  __shared__ float fred[32];
  __shared__ ArgMax ared[32];
  __shared__ unsigned long long hist[256];
  __shared__ uint64_t scan_scratch[32];
  __shared__ uint32_t state[4];
  __shared__ int32_t chosen[kMaxTopLogprobs];
  __shared__ int32_t picked;

  const int b = blockIdx.x;
  const float* l = logits + static_cast<size_t>(b) * ld;
  float* p = scratch + static_cast<size_t>(b) * V;
  const SamplingSlot s = slots[b];

  // The maximum (the greedy token) and the log-sum-exp: merged from the
  // slices' partials when head_partials_kernel ran, else two passes here.
  ArgMax best{-INFINITY, 0x7fffffff};
  float z = 0.0f;
  if (partials) {
    const HeadPartial* pr = partials + b * kHeadSlices;
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
  if (s.temperature > 0.0f && s.top_k != 1) {
    const float inv_t = 1.0f / s.temperature;
    for (int i = threadIdx.x; i < V; i += kThreads) p[i] = expf((l[i] - m) * inv_t);
    __syncthreads();
    uint32_t tau;
    uint64_t above;
    if (s.top_k > 0 && s.top_k < V) {
      radix_select(p, V, false, static_cast<uint64_t>(s.top_k), tau, above, hist, state);
      keep_top(p, V, tau, static_cast<uint64_t>(s.top_k) - above, scan_scratch);
    }
    if (s.top_p < 1.0f) {
      uint64_t mine = 0;
      for (int i = threadIdx.x; i < V; i += kThreads) mine += weight(p[i]);
      uint64_t total;
      block_exclusive_scan(mine, scan_scratch, total);
      const double want = ceil(static_cast<double>(fmaxf(s.top_p, 0.0f)) * total);
      const uint64_t target = max(static_cast<uint64_t>(want), static_cast<uint64_t>(1));
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
    // engine::uniform_variate(seed, step) of the CPU sampler.
    const double u =
        static_cast<double>(mix64(mix64(s.seed) ^ (s.counter * 0xd1b54a32d192ed03ull)) >> 11) *
        0x1.0p-53;
    uint64_t r = static_cast<uint64_t>(u * static_cast<double>(total));
    if (total > 0 && r >= total) r = total - 1;
    if (threadIdx.x == 0) picked = best.i;  // total == 0 cannot happen (max has p = 1)
    __syncthreads();
    const bool truncated = (s.top_k > 0 && s.top_k < V) || s.top_p < 1.0f;
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
  for (int k = 0; k < n_top; ++k) {
    ArgMax cand{-INFINITY, 0x7fffffff};
    for (int i = threadIdx.x; i < V; i += kThreads) {
      bool taken = false;
      for (int j = 0; j < k; ++j) taken |= chosen[j] == i;
      if (!taken) cand = better(cand, ArgMax{l[i], i});
    }
    cand = block_argmax(cand, ared);
    if (threadIdx.x == 0) {
      chosen[k] = cand.i;
      out->top_ids[k] = cand.i;
      out->top_logprobs[k] = cand.v - lse;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out->token = token;
    out->logprob = l[token] - lse;
  }
}

}  // namespace

namespace detail {

cudaError_t sample_launch(const float* logits, int ld, int batch, int vocab,
                          const SamplingSlot* slots, float* scratch, SampleResult* results,
                          cudaStream_t stream) {
  sample_kernel<<<batch, kThreads, 0, stream>>>(logits, ld, vocab, slots, scratch, nullptr,
                                                results);
  return cudaGetLastError();
}

cudaError_t sample_halves_launch(float* logits, int batch, int vocab, const SamplingSlot* slots,
                                 float* scratch, HeadPartial* partials, SampleResult* results,
                                 cudaStream_t stream) {
  head_partials_kernel<<<dim3(kHeadSlices, batch), kPartialThreads, 0, stream>>>(logits, vocab,
                                                                                 batch, partials);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  sample_kernel<<<batch, kThreads, 0, stream>>>(logits, vocab, vocab, slots, scratch, partials,
                                                results);
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace ringserve::kernels
