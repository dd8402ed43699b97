#include "model/rope_frequencies.h"

#include <cmath>

#include "model/weights.h"

namespace ringserve::model {

std::vector<float> rope_inv_freq(int head_dim, double theta) {
  std::vector<float> inv_freq(head_dim / 2);
  for (int i = 0; i < head_dim / 2; ++i) {
    const auto exact = static_cast<float>(1.0 / std::pow(theta, (2.0 * i) / head_dim));
    inv_freq[i] = bf16_to_float(float_to_bf16(exact));
  }
  return inv_freq;
}

}  // namespace ringserve::model
