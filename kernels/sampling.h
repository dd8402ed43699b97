// Token sampling on the GPU: only the chosen ids (and requested logprobs)
// leave the device.
//
// Semantics: those of the CPU reference sampler (server/engine/sampler.h).
//   temperature <= 0: argmax, lowest id on ties.
//   otherwise p_i = exp((l_i - max l) / temperature); keep the top_k largest
//   (0 = all; ties at the boundary go to the lower id), then the smallest
//   prefix of the kept set in descending order (ties: lower id first) whose
//   mass reaches top_p of the kept mass (1 = all); draw u = uniform(seed,
//   counter) and pick the first token whose cumulative mass exceeds u * kept
//   mass, walking in descending order when top_k or top_p truncated the
//   vocabulary and in id order when they did not (as the CPU sampler does).
//   logprob = log_softmax(raw logits)[token] (temperature not applied), and the
//   top_logprobs best raw log-probabilities, best first (ties: lower id).
// Masses are summed in 40-bit fixed point so every run, whatever the thread
// schedule, draws the same token for the same (seed, counter).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#ifndef __CUDACC__
#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

constexpr int kMaxTopLogprobs = 20;

struct SamplingSlot {
  float temperature = 0.0f;
  float top_p = 1.0f;
  int32_t top_k = 0;
  int32_t top_logprobs = 0;
  uint64_t seed = 0;
  uint64_t counter = 0;  // tokens this sequence has sampled so far
};

struct SampleResult {
  int32_t token = 0;
  float logprob = 0.0f;
  int32_t top_ids[kMaxTopLogprobs];
  float top_logprobs[kMaxTopLogprobs];
};

// Whether a row draws (else it takes the argmax), and whether its top_k
// (over a vocabulary of V) and its top_p cut anything: the one definition
// the kernels and the engine share.
__host__ __device__ inline bool samples(const SamplingSlot& s) {
  return s.temperature > 0.0f && s.top_k != 1;
}
__host__ __device__ inline bool top_k_cuts(const SamplingSlot& s, int V) {
  return s.top_k > 0 && s.top_k < V;
}
__host__ __device__ inline bool top_p_cuts(const SamplingSlot& s) {
  return s.top_p < 1.0f;
}

// Per row and slice of the vocabulary: the largest logit, its id and the sum
// of exp(logit - largest) over the slice (see sample_tokens_from_halves).
struct HeadPartial {
  float m;
  int32_t i;
  float z;
};
constexpr int kHeadSlices = 64;

// How a sampled (not greedy) row finds its token. Both draw the same token
// for the same logits and (seed, counter): they differ in speed only.
enum class SampleStrategy {
  // One block a row walks the whole vocabulary, one radix select (four
  // passes) per truncation and one for the draw. ~1.3 ms at 152k tokens.
  kOneBlock,
  // kHeadSlices blocks a row count the probabilities into kMassBins bins by
  // key (32 an octave) and gather the tokens of the few bins where the cuts
  // (top_k's, top_p's, the draw's) fall; one block sorts those (at most
  // kMaxCandidates) and draws. The id-order draw of an untruncated row walks
  // only the slice its variate falls in. Where those bins hold more tokens
  // (much of the vocabulary in one bin: near-equal logits, a very high
  // temperature) the row falls back to kOneBlock in the same launch.
  kCandidates,
};

// Probabilities with a nonzero fixed-point mass are p >= 2^-40; their float
// bits, from kMinMassKey to those of 1.0, fall into kMassBins bins.
constexpr uint32_t kMinMassKey = 87u << 23;  // bits of 2^-40
constexpr int kMassBinShift = 18;            // 32 bins an octave
constexpr int kMassBins = ((0x3f800000u - kMinMassKey) >> kMassBinShift) + 1;
constexpr int kMaxCandidates = 4096;

struct SampleCandidate {
  uint32_t key;  // float bits of the token's probability
  int32_t id;
};

// Which route drew a row's token in the last launch (SamplingRowScratch::route).
enum class SampleRoute : uint32_t { kGreedy = 1, kOneBlock = 2, kCandidates = 3, kIdOrder = 4 };

// Device memory per row that the sampling kernels hand each other; left
// behind after a launch, so tests can see which route a row took.
struct SamplingRowScratch {
  uint64_t bin_mass[kMassBins];
  uint64_t slice_mass[kHeadSlices];
  uint32_t bin_count[kMassBins];
  HeadPartial partials[kHeadSlices];
  uint32_t n_candidates;
  SampleRoute route;
  SampleCandidate candidates[kMaxCandidates];
};

#ifndef __CUDACC__
// logits [batch, ld] fp32; slots [batch] and results [batch] in device (or
// mapped host) memory; scratch: batch * vocab floats of device memory.
// Always the kOneBlock strategy.
Status sample_tokens(const float* logits, int ld, int batch, int vocab, const SamplingSlot* slots,
                     float* scratch, SampleResult* results, cudaStream_t stream);

// The same for the head's output as two halves, logits [2 * batch, vocab]
// (row batch + b holds the part of row b that one bf16 rounding of the
// head's input would lose): each row b becomes the fp32 sum of the two
// first, in place. The maximum and the log-sum-exp come from kHeadSlices
// blocks a row instead of the one block that samples, so a greedy step no
// longer waits for one SM to read the vocabulary twice. rows: batch
// SamplingRowScratch of device memory.
Status sample_tokens_from_halves(float* logits, int batch, int vocab, const SamplingSlot* slots,
                                 float* scratch, SamplingRowScratch* rows, SampleResult* results,
                                 SampleStrategy strategy, cudaStream_t stream);
#endif

namespace detail {
cudaError_t sample_launch(const float* logits, int ld, int batch, int vocab,
                          const SamplingSlot* slots, float* scratch, SampleResult* results,
                          cudaStream_t stream);
cudaError_t sample_halves_launch(float* logits, int batch, int vocab, const SamplingSlot* slots,
                                 float* scratch, SamplingRowScratch* rows, SampleResult* results,
                                 SampleStrategy strategy, cudaStream_t stream);
// The kCandidates passes between head_partials_kernel and the sampling block
// (sampling_candidates.cu).
cudaError_t sample_candidates_launch(const float* logits, int batch, int vocab,
                                     const SamplingSlot* slots, SamplingRowScratch* rows,
                                     cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
