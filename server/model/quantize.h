// Per-output-channel symmetric INT8 quantization of linear weights:
//   scale[r] = max_c |w[r, c]| / 127
//   q[r, c]  = clamp(round_half_to_even(w[r, c] / scale[r]), -127, 127)
// so |w - q * scale| <= scale / 2 for every element, and rows whose values
// are already integer multiples of scale (the int8-exact fixture) come back
// bit-exact.
//
// An all-zero row gets scale 0 and q = 0: dequantizing gives exactly 0, and no
// engine has to special-case it (scale * acc = 0). Non-finite weights (NaN,
// inf) are refused: they would poison the whole row's scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "model/dtype.h"
#include "model/tensor_source.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::model {

// Quantizes one row of fp32 values. Returns false (leaving q/scale
// unspecified) when the row holds a NaN or infinity.
bool quantize_row(std::span<const float> w, std::span<int8_t> q, float& scale) noexcept;

// Quantizes a [rows, cols] matrix of BF16, F16 or F32 elements at `src`,
// spreading rows over `threads` threads (0: hardware concurrency).
// Errors: kInvalidArgument (dtype not float-like), kCorruptData (a non-finite
// value; the message names the row).
Status quantize_matrix(DType dtype, const std::byte* src, int rows, int cols, std::span<int8_t> q,
                       std::span<float> scale, int threads);

// A 2-D float tensor view -> QuantLinear without bias. Errors name the tensor.
Expected<QuantLinear> quantize_linear(const TensorView& tensor, int threads);

}  // namespace ringserve::model
