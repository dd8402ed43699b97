// Device pieces every sampling kernel shares. Each kernel that computes a
// token's probability, its fixed-point mass or the variate must compute them
// through these, so that the kernels of a launch, and the two strategies,
// agree bit for bit.
#pragma once

#include <cstdint>

#include "common.cuh"
#include "sampling.h"

namespace ringserve::kernels::detail {

constexpr float kFixedOne = 1099511627776.0f;  // 2^40
static_assert(kMassBins == 1281, "bins from 2^-40 to 1, 32 an octave");

// exp((l - m) / T) with the subtraction and product rounded as written, so
// no kernel contracts them differently from another.
__device__ __forceinline__ float sample_prob(float l, float m, float inv_t) {
  return expf(__fmul_rn(__fsub_rn(l, m), inv_t));
}

// Masses are summed in 40-bit fixed point: integer sums do not depend on
// their order, so every thread schedule draws the same token.
__device__ __forceinline__ uint64_t weight(float p) {
  return __float2ull_rz(p * kFixedOne);
}

__device__ __forceinline__ int mass_bin(uint32_t key) {
  return min(static_cast<int>((key - kMinMassKey) >> kMassBinShift), kMassBins - 1);
}

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// engine::uniform_variate(seed, step) of the CPU sampler.
__device__ __forceinline__ double uniform_variate(uint64_t seed, uint64_t counter) {
  return static_cast<double>(mix64(mix64(seed) ^ (counter * 0xd1b54a32d192ed03ull)) >> 11) *
         0x1.0p-53;
}

// The draw's position in [0, total): total > 0.
__device__ __forceinline__ uint64_t draw_position(const SamplingSlot& s, uint64_t total) {
  const double u = uniform_variate(s.seed, s.counter);
  uint64_t r = static_cast<uint64_t>(u * static_cast<double>(total));
  if (total > 0 && r >= total) r = total - 1;
  return r;
}

// top_p's share of `total`, rounded up, at least 1.
__device__ __forceinline__ uint64_t nucleus_target(float top_p, uint64_t total) {
  const double want = ceil(static_cast<double>(fmaxf(top_p, 0.0f)) * total);
  return max(static_cast<uint64_t>(want), static_cast<uint64_t>(1));
}

struct ArgMax {
  float v;
  int i;
};

__device__ __forceinline__ ArgMax better(ArgMax a, ArgMax b) {
  if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;
  return a;
}

// blockDim.x a multiple of 32; every thread gets the result.
__device__ inline ArgMax block_argmax(ArgMax a, ArgMax* scratch) {
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

// Exclusive prefix sum over the block in thread order (blockDim.x a
// multiple of 32); also returns the total. scratch: 32 values.
__device__ inline uint64_t block_exclusive_scan(uint64_t v, uint64_t* scratch, uint64_t& total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int nwarps = blockDim.x / 32;
  uint64_t inc = v;
  for (int o = 1; o < 32; o <<= 1) {
    const uint64_t y = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += y;
  }
  __syncthreads();
  if (lane == 31) scratch[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    uint64_t w = lane < nwarps ? scratch[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      const uint64_t y = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += y;
    }
    scratch[lane] = w;  // inclusive over warps
  }
  __syncthreads();
  total = scratch[nwarps - 1];
  const uint64_t before = warp > 0 ? scratch[warp - 1] : 0;
  return before + inc - v;
}

// The row's largest logit from its slices' partials (what block_argmax over
// them gives the sampling block).
__device__ inline float merged_max(const HeadPartial* partials, float* scratch) {
  float m = -INFINITY;
  for (int i = threadIdx.x; i < kHeadSlices; i += blockDim.x) m = fmaxf(m, partials[i].m);
  return block_max(m, scratch);
}

// The ids [begin, end) of slice `slice` of a vocabulary of V.
__device__ __forceinline__ void slice_range(int V, int slice, int& begin, int& end) {
  const int per = (V + kHeadSlices - 1) / kHeadSlices;
  begin = min(V, slice * per);
  end = min(V, begin + per);
}

}  // namespace ringserve::kernels::detail
