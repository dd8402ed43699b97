// Picks each decode GEMV's launch shape (tiles per block, warps splitting K,
// kernel variant) by timing the candidates on the model's own weights at
// start-up: the best shape depends on the matrix and the GPU, and a few
// milliseconds of measurement beat a table of guesses. Before a candidate is
// timed its output (random activations, every batch row up to
// min(max_batch, 8)) is compared with the reference variant's (the original
// kernel at its default shape); a candidate that disagrees is logged and
// never chosen, so a broken variant can cost speed but not correctness.
// Each GEMV gets two shapes: the fastest at batch 1, and the fastest at the
// engine's widest decode batch (up to 8) among the shapes that add up in the
// batch-1 shape's order, so a sequence's logits are bitwise the same
// whatever it is batched with (kernels::same_summation_order). Shapes
// within 1 % of the fastest are taken as tied, and the first of them in
// order (the reference, then kernels::gemv_configs) is chosen, so that a
// restart picks the same shapes and a seeded request samples the same
// tokens.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>

#include "cuda/device_model.h"
#include "cuda/workspace.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

// Shapes whose times are within this ratio of the fastest are tied.
inline constexpr float kGemvTimeTie = 1.01f;

// Which of the candidates timed `ms` (in enumeration order) the tuner
// takes: the first within `tie` of the fastest; -1 if no time is finite.
inline int pick_first_within(std::span<const float> ms, float tie = kGemvTimeTie) {
  float best = INFINITY;
  for (float t : ms)
    if (std::isfinite(t)) best = std::min(best, t);
  if (!std::isfinite(best)) return -1;
  for (size_t i = 0; i < ms.size(); ++i)
    if (ms[i] <= best * tie) return static_cast<int>(i);
  return -1;
}

// Returns a one-line summary of the chosen shapes for the log.
// with_persistent: also the persistent shapes (CudaTuning::persistent_gemv);
// with_ring: also the ring shapes (CudaTuning::ring_gemv), where they can run.
Expected<std::string> tune_gemv(DeviceModel& model, Workspace& ws, cudaStream_t stream,
                                bool with_persistent = false, bool with_ring = false);

}  // namespace ringserve::cuda
