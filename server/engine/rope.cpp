#include "engine/rope.h"

#include <cmath>

#include "model/rope_frequencies.h"

namespace ringserve::engine::cpu {

RopeTable::RopeTable(int head_dim, double theta, int max_positions)
    : half_(head_dim / 2), max_positions_(max_positions) {
  const std::vector<float> inv_freq = model::rope_inv_freq(head_dim, theta);
  cos_.resize(static_cast<size_t>(max_positions) * half_);
  sin_.resize(cos_.size());
  for (int p = 0; p < max_positions; ++p) {
    for (int i = 0; i < half_; ++i) {
      const float angle = static_cast<float>(p) * inv_freq[i];
      cos_[static_cast<size_t>(p) * half_ + i] = static_cast<float>(std::cos(angle));
      sin_[static_cast<size_t>(p) * half_ + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void RopeTable::apply(float* x, int heads, int pos) const noexcept {
  const float* c = cos_.data() + static_cast<size_t>(pos) * half_;
  const float* s = sin_.data() + static_cast<size_t>(pos) * half_;
  for (int h = 0; h < heads; ++h) {
    float* v = x + static_cast<size_t>(h) * 2 * half_;
    for (int i = 0; i < half_; ++i) {
      const float a = v[i], b = v[i + half_];
      v[i] = a * c[i] - b * s[i];
      v[i + half_] = b * c[i] + a * s[i];
    }
  }
}

}  // namespace ringserve::engine::cpu
