#include "model/weights.h"

namespace ringserve::model {

size_t ModelWeights::linear_bytes() const {
  size_t total = lm_head.weight_bytes();
  for (const auto& l : layers) {
    for (const QuantLinear* q :
         {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj})
      total += q->weight_bytes();
  }
  return total;
}

}  // namespace ringserve::model
