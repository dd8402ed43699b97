// Rotary position embedding, Hugging Face Qwen2 convention ("rotate half"):
// the pair (x[i], x[i + d/2]) is rotated by pos * inv_freq[i], with
// inv_freq[i] = theta^(-2i/d) rounded to bf16.
//
// The bf16 rounding is deliberate: transformers keeps inv_freq as a float
// buffer that is cast with the model, so a bf16 checkpoint (every model we
// serve, and the reference that produced tests/fixtures/*/golden.json) runs
// with bf16 frequencies. Using exact frequencies instead moves logits by up
// to 4e-3 at position 64 on the fixtures. Other backends must do the same.
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
