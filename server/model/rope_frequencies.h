// The rotary inverse frequencies of a Qwen2 model: theta^(-2i/head_dim) for
// i < head_dim / 2, computed in double, narrowed to float, then rounded to
// bf16.
//
// The bf16 rounding is deliberate: transformers keeps inv_freq as a float
// buffer that is cast with the model, so a bf16 checkpoint (every model we
// serve, and the reference that produced tests/fixtures/*/golden.json) runs
// with bf16 frequencies. Exact frequencies move logits by up to 4e-3 at
// position 64 on the fixtures. Every backend takes its table from here.
#pragma once

#include <vector>

namespace ringserve::model {

std::vector<float> rope_inv_freq(int head_dim, double theta);

}  // namespace ringserve::model
