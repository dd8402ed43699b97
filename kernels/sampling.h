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

// Per row and slice of the vocabulary: the largest logit, its id and the sum
// of exp(logit - largest) over the slice (see sample_tokens_from_halves).
struct HeadPartial {
  float m;
  int32_t i;
  float z;
};
constexpr int kHeadSlices = 64;

#ifndef __CUDACC__
// logits [batch, ld] fp32; slots [batch] and results [batch] in device (or
// mapped host) memory; scratch: batch * vocab floats of device memory.
Status sample_tokens(const float* logits, int ld, int batch, int vocab, const SamplingSlot* slots,
                     float* scratch, SampleResult* results, cudaStream_t stream);

// The same for the head's output as two halves, logits [2 * batch, vocab]
// (row batch + b holds the part of row b that one bf16 rounding of the
// head's input would lose): each row b becomes the fp32 sum of the two
// first, in place. The maximum and the
// log-sum-exp come from kHeadSlices blocks a row (partials: batch *
// kHeadSlices of device memory) instead of the one block that samples, so
// a greedy step no longer waits for one SM to read the vocabulary twice.
Status sample_tokens_from_halves(float* logits, int batch, int vocab, const SamplingSlot* slots,
                                 float* scratch, HeadPartial* partials, SampleResult* results,
                                 cudaStream_t stream);
#endif

namespace detail {
cudaError_t sample_launch(const float* logits, int ld, int batch, int vocab,
                          const SamplingSlot* slots, float* scratch, SampleResult* results,
                          cudaStream_t stream);
cudaError_t sample_halves_launch(float* logits, int batch, int vocab, const SamplingSlot* slots,
                                 float* scratch, HeadPartial* partials, SampleResult* results,
                                 cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
