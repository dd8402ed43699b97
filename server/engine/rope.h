// Rotary position embedding, Hugging Face Qwen2 convention ("rotate half"):
// the pair (x[i], x[i + d/2]) is rotated by pos * inv_freq[i], with the
// bf16-rounded frequencies of model/rope_frequencies.h.
#pragma once

#include <vector>

namespace ringserve::engine::cpu {

class RopeTable {
 public:
  RopeTable() = default;
  // Angles are pos * inv_freq in fp32 (as transformers computes them);
  // cos/sin are stored as fp32.
  RopeTable(int head_dim, double theta, int max_positions);

  // Rotates `heads` consecutive vectors of head_dim floats in place.
  void apply(float* x, int heads, int pos) const noexcept;

  int max_positions() const { return max_positions_; }

 private:
  int half_ = 0;
  int max_positions_ = 0;
  std::vector<float> cos_, sin_;  // [max_positions, half]
};

}  // namespace ringserve::engine::cpu
