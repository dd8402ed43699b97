// The kCandidates strategy's device functions (sampling.h): which tokens a
// truncated draw can reach, read off the row's mass histogram, and the two
// draws that avoid walking the vocabulary with one block.
//
// Why a few bins suffice. Order the tokens by (probability desc, id asc).
// top_k keeps the first k; top_p the shortest prefix of those whose
// fixed-point mass reaches nucleus_target(top_p, kept mass); the draw takes
// the first token whose running mass exceeds draw_position(total). Tokens
// with p < 2^-40 have no mass and no bin: they never decide a nucleus or a
// draw, and only fill top_k's count when fewer than k tokens have mass,
// in which case every token with mass is kept. The histogram gives every
// bin's running count and mass, so each of the three cuts (the k-th token,
// the nucleus's last token, the drawn token) falls in a bin it can name, or
// in a short run of bins where the cut depends on an earlier one. Only the
// tokens of those bins need sorting; the mass of the bins between them comes
// from the histogram.
#pragma once

#include <cub/block/block_radix_sort.cuh>

#include "sampling_device.cuh"

namespace ringserve::kernels::detail {

constexpr int kMaxRanges = 3;

// A run of bins, top >= bottom (higher bins hold likelier tokens).
struct BinRange {
  int top, bottom;
};

struct RegionPlan {
  bool id_order;  // nothing truncates: the draw walks the ids in order
  bool fits;      // the gathered ranges hold every cut, within kMaxCandidates
  bool k_binds;   // top_k keeps fewer tokens than have mass
  int n_ranges;   // disjoint, highest first
  BinRange ranges[kMaxRanges];
  // Tokens above each range's top bin that are not gathered: their count
  // and mass, added to a candidate's rank and running mass among the
  // candidates give its rank and running mass in the whole row.
  uint64_t skipped_count[kMaxRanges];
  uint64_t skipped_mass[kMaxRanges];
  uint32_t count;       // tokens with mass in the ranges
  uint64_t mass_total;  // the row's whole fixed-point mass

  __device__ int range_of(int bin) const {
    for (int i = 0; i < n_ranges; ++i)
      if (bin <= ranges[i].top && bin >= ranges[i].bottom) return i;
    return -1;
  }
};

// Running totals of the bins above each bin, highest bin first: above[b]
// counts the tokens in bins b + 1 and up.
struct BinPrefix {
  uint32_t count_above[kMassBins];
  uint64_t mass_above[kMassBins];
};

// The bin where the running count (by_mass false) or mass first reaches
// target (>= 1), or -1. Every thread gets it; result: shared.
__device__ inline int crossing_bin(const BinPrefix& prefix, uint64_t count_total,
                                   uint64_t mass_total, bool by_mass, uint64_t target,
                                   int* result) {
  if (threadIdx.x == 0) *result = -1;
  __syncthreads();
  for (int bin = threadIdx.x; bin < kMassBins; bin += blockDim.x) {
    const uint64_t before = by_mass ? prefix.mass_above[bin] : prefix.count_above[bin];
    const uint64_t after =
        bin > 0 ? (by_mass ? prefix.mass_above[bin - 1] : prefix.count_above[bin - 1])
                : (by_mass ? mass_total : count_total);
    if (before < target && target <= after) *result = bin;
  }
  __syncthreads();
  const int bin = *result;
  __syncthreads();
  return bin;
}

// Fills `plan` (shared) for the row; every thread calls it. prefix: shared;
// scratch: 32 values; result: one shared int.
__device__ inline void plan_region(const SamplingRowScratch& row, const SamplingSlot& s, int V,
                                   BinPrefix& prefix, uint64_t* scratch, int* result,
                                   RegionPlan& plan) {
  const bool k_active = top_k_cuts(s, V);
  const bool p_active = top_p_cuts(s);
  if (!k_active && !p_active) {
    if (threadIdx.x == 0) {
      plan.id_order = plan.fits = true;
      plan.n_ranges = 0;
    }
    __syncthreads();
    return;
  }
  // Each thread takes a run of bins, highest first: the block's scans are
  // then the running count and mass in descending probability.
  const int per = (kMassBins + blockDim.x - 1) / blockDim.x;
  const int first = min(kMassBins, static_cast<int>(threadIdx.x) * per);
  const int last = min(kMassBins, first + per);
  uint64_t count = 0, mass = 0;
  for (int q = first; q < last; ++q) {
    count += row.bin_count[kMassBins - 1 - q];
    mass += row.bin_mass[kMassBins - 1 - q];
  }
  uint64_t count_total, mass_total;
  uint64_t run_count = block_exclusive_scan(count, scratch, count_total);
  uint64_t run_mass = block_exclusive_scan(mass, scratch, mass_total);
  for (int q = first; q < last; ++q) {
    const int bin = kMassBins - 1 - q;
    prefix.count_above[bin] = static_cast<uint32_t>(run_count);
    prefix.mass_above[bin] = run_mass;
    run_count += row.bin_count[bin];
    run_mass += row.bin_mass[bin];
  }
  __syncthreads();
  auto cross = [&](bool by_mass, uint64_t target) {
    return crossing_bin(prefix, count_total, mass_total, by_mass, target, result);
  };
  auto mass_through = [&](int bin) { return bin > 0 ? prefix.mass_above[bin - 1] : mass_total; };
  auto count_through = [&](int bin) {
    return bin > 0 ? static_cast<uint64_t>(prefix.count_above[bin - 1]) : count_total;
  };

  // Each cut's bin, or the run of bins it can fall in given the cut before
  // it; the bounds below hold whatever that earlier cut's exact place.
  BinRange need[kMaxRanges];
  int n_need = 0;
  bool ok = count_total > 0;
  const bool k_binds = k_active && static_cast<uint64_t>(s.top_k) < count_total;
  uint64_t kept_lo = mass_total, kept_hi = mass_total;  // the kept set's mass
  if (ok && k_binds) {
    const int k_bin = cross(false, static_cast<uint64_t>(s.top_k));
    ok = k_bin >= 0;
    if (ok) {
      need[n_need++] = {k_bin, k_bin};
      kept_lo = prefix.mass_above[k_bin] + 1;  // at least one kept token of k_bin
      kept_hi = mass_through(k_bin);
    }
  }
  uint64_t total_lo = kept_lo, total_hi = kept_hi;  // the mass the draw runs over
  if (ok && p_active) {
    const uint64_t target_lo = nucleus_target(s.top_p, kept_lo);
    const uint64_t target_hi = nucleus_target(s.top_p, kept_hi);
    const int p_top = cross(true, target_lo), p_bottom = cross(true, target_hi);
    ok = p_top >= 0 && p_bottom >= 0;
    if (ok) {
      need[n_need++] = {p_top, p_bottom};
      total_lo = target_lo;
      total_hi = min(kept_hi, mass_through(p_bottom));
    }
  }
  if (ok) {
    const int d_top = cross(true, draw_position(s, total_lo) + 1);
    const int d_bottom = cross(true, draw_position(s, total_hi) + 1);
    ok = d_top >= 0 && d_bottom >= 0;
    if (ok) need[n_need++] = {d_top, d_bottom};
  }

  // The needed runs, highest first, merged where they touch.
  for (int i = 1; i < n_need; ++i)
    for (int j = i; j > 0 && need[j].top > need[j - 1].top; --j) {
      const BinRange t = need[j];
      need[j] = need[j - 1];
      need[j - 1] = t;
    }
  BinRange merged[kMaxRanges];
  int n = 0;
  for (int i = 0; i < n_need; ++i) {
    if (n > 0 && need[i].top >= merged[n - 1].bottom - 1)
      merged[n - 1].bottom = min(merged[n - 1].bottom, need[i].bottom);
    else
      merged[n++] = need[i];
  }
  uint64_t gathered = 0, gathered_mass = 0;
  uint64_t skipped_count[kMaxRanges], skipped_mass[kMaxRanges];
  for (int i = 0; i < n; ++i) {
    skipped_count[i] = prefix.count_above[merged[i].top] - gathered;
    skipped_mass[i] = prefix.mass_above[merged[i].top] - gathered_mass;
    gathered += count_through(merged[i].bottom) - prefix.count_above[merged[i].top];
    gathered_mass += mass_through(merged[i].bottom) - prefix.mass_above[merged[i].top];
  }
  if (threadIdx.x == 0) {
    plan.id_order = false;
    plan.fits = ok && gathered <= static_cast<uint64_t>(kMaxCandidates);
    plan.k_binds = k_binds;
    plan.n_ranges = ok ? n : 0;
    for (int i = 0; i < n; ++i) {
      plan.ranges[i] = merged[i];
      plan.skipped_count[i] = skipped_count[i];
      plan.skipped_mass[i] = skipped_mass[i];
    }
    plan.count = static_cast<uint32_t>(min(gathered, static_cast<uint64_t>(0xffffffffu)));
    plan.mass_total = mass_total;
  }
  __syncthreads();
}

constexpr int kSortThreads = 1024;
constexpr int kSortItems = kMaxCandidates / kSortThreads;
static_assert(kSortItems * kSortThreads == kMaxCandidates);
// Candidates sort on (key - kMinMassKey) << id_bits | (2^id_bits - 1 - id),
// with 2^id_bits > vocab so no real candidate sorts as the zero padding; a
// key less kMinMassKey is below 2^29, so 152k tokens sort on 47 bits.
constexpr int kKeyBits = 29;
using CandidateSort = cub::BlockRadixSort<unsigned long long, kSortThreads, kSortItems>;

// The truncated draw from the row's n gathered candidates (n == plan.count):
// sorted by probability (ties: lower id first), each placed in the whole
// row's order by its range's skipped tokens, the three cuts taken. Returns
// the drawn token, or -1 when a cut was not among the candidates (which the
// plan rules out). Every thread gets the same answer.
// blockDim.x == kSortThreads. shared: 2 values.
__device__ inline int draw_from_candidates(const SamplingRowScratch& row, uint32_t n,
                                           const SamplingSlot& s, int V, const RegionPlan& plan,
                                           CandidateSort::TempStorage& sort_storage,
                                           uint64_t* scratch, uint64_t* shared) {
  const int id_bits = 32 - __clz(V);
  const uint32_t id_mask = (1u << id_bits) - 1u;
  unsigned long long keys[kSortItems];
#pragma unroll
  for (int j = 0; j < kSortItems; ++j) {
    const uint32_t at = threadIdx.x * kSortItems + j;
    keys[j] = 0;  // sorts last
    if (at < n) {
      const SampleCandidate c = row.candidates[at];
      keys[j] = (static_cast<unsigned long long>(c.key - kMinMassKey) << id_bits) |
                (id_mask - static_cast<uint32_t>(c.id));
    }
  }
  CandidateSort(sort_storage).SortDescending(keys, 0, kKeyBits + id_bits);

  // Thread t now holds candidate ranks [t * kSortItems, (t + 1) * kSortItems).
  uint64_t w[kSortItems], skipped[kSortItems];
  int32_t id[kSortItems];
  uint64_t mine = 0;
  bool last_kept = false;  // holds the k-th token of the row
  int last_kept_item = 0;
#pragma unroll
  for (int j = 0; j < kSortItems; ++j) {
    const uint32_t rank = threadIdx.x * kSortItems + j;
    const uint32_t key = static_cast<uint32_t>(keys[j] >> id_bits) + kMinMassKey;
    id[j] = static_cast<int32_t>(id_mask - (static_cast<uint32_t>(keys[j]) & id_mask));
    w[j] = 0;
    skipped[j] = 0;
    if (rank < n) {
      const int range = max(0, plan.range_of(mass_bin(key)));  // gathered: always in one
      const uint64_t row_rank = plan.skipped_count[range] + rank;
      skipped[j] = plan.skipped_mass[range];
      if (!plan.k_binds || row_rank < static_cast<uint64_t>(s.top_k))
        w[j] = weight(__uint_as_float(key));
      if (plan.k_binds && row_rank + 1 == static_cast<uint64_t>(s.top_k)) {
        last_kept = true;
        last_kept_item = j;
      }
    }
    mine += w[j];
  }
  uint64_t candidates_mass;
  const uint64_t before = block_exclusive_scan(mine, scratch, candidates_mass);

  // The kept set's mass: through the k-th token, or the row's.
  constexpr uint64_t kNone = ~0ull;
  if (threadIdx.x == 0) shared[0] = plan.k_binds ? kNone : plan.mass_total;
  __syncthreads();
  {
    uint64_t run = before;
#pragma unroll
    for (int j = 0; j < kSortItems; ++j) {
      run += w[j];
      if (last_kept && j == last_kept_item) shared[0] = skipped[j] + run;
    }
  }
  __syncthreads();
  const uint64_t kept_mass = shared[0];
  if (kept_mass == kNone) return -1;

  // The candidate whose interval [running mass before it, after it) holds
  // position q: its running mass after it (kNone if none) and its id.
  auto locate = [&](uint64_t q, int32_t& found) {
    __syncthreads();
    if (threadIdx.x == 0) shared[0] = kNone;
    __syncthreads();
    uint64_t run = before;
#pragma unroll
    for (int j = 0; j < kSortItems; ++j) {
      const uint64_t prev = skipped[j] + run;
      run += w[j];
      if (prev <= q && q < skipped[j] + run) {
        shared[0] = skipped[j] + run;
        shared[1] = static_cast<uint64_t>(id[j]);
      }
    }
    __syncthreads();
    found = static_cast<int32_t>(shared[1]);
    return shared[0];
  };
  int32_t token = -1;
  // The nucleus ends at the token where the running mass reaches the target.
  const uint64_t total =
      top_p_cuts(s) ? locate(nucleus_target(s.top_p, kept_mass) - 1, token) : kept_mass;
  if (total == kNone) return -1;
  // The draw: the token whose interval holds the variate's position.
  if (locate(draw_position(s, total), token) == kNone) return -1;
  return token;
}

// The untruncated draw, in id order: the slice holding the variate's
// position from the slices' masses, then one walk over that slice. m, inv_t:
// as the histogram kernel computed the masses. picked: shared, set to the
// fallback token by the caller.
__device__ inline void draw_in_id_order(const SamplingRowScratch& row, const float* l, int V,
                                        const SamplingSlot& s, float m, float inv_t,
                                        uint64_t* scratch, uint64_t* shared_u64, int32_t* picked) {
  if (threadIdx.x == 0) shared_u64[0] = ~0ull;  // no slice found
  const uint64_t slice_mass = threadIdx.x < kHeadSlices ? row.slice_mass[threadIdx.x] : 0;
  uint64_t total;
  const uint64_t slice_before = block_exclusive_scan(slice_mass, scratch, total);
  const uint64_t r = draw_position(s, total);
  if (slice_mass > 0 && slice_before <= r && r < slice_before + slice_mass) {
    shared_u64[0] = threadIdx.x;
    shared_u64[1] = slice_before;
  }
  __syncthreads();
  const uint64_t slice = shared_u64[0], base = shared_u64[1];
  if (slice == ~0ull) return;  // no mass: the caller's fallback token stands
  int begin, end;
  slice_range(V, static_cast<int>(slice), begin, end);
  const int chunk = (end - begin + blockDim.x - 1) / blockDim.x;
  const int lo = min(end, begin + static_cast<int>(threadIdx.x) * chunk);
  const int hi = min(end, lo + chunk);
  uint64_t mine = 0;
  for (int i = lo; i < hi; ++i) mine += weight(sample_prob(l[i], m, inv_t));
  uint64_t slice_total;
  const uint64_t before = base + block_exclusive_scan(mine, scratch, slice_total);
  if (before <= r && r < before + mine) {
    uint64_t run = before;
    for (int i = lo; i < hi; ++i) {
      run += weight(sample_prob(l[i], m, inv_t));
      if (run > r) {
        *picked = i;
        break;
      }
    }
  }
  __syncthreads();
}

}  // namespace ringserve::kernels::detail
