// The pre-quantized ringserve checkpoint written by `ringserve convert`:
// config.json plus model.safetensors with __metadata__
// {"format": "ringserve-int8", "version": "1"} holding, per linear layer,
//   <name>.weight        I8  [rows, cols]
//   <name>.weight_scale  F32 [rows]
//   <name>.bias          F32 [rows]      (q/k/v only)
// and model.embed_tokens.weight BF16, norms F32. lm_head.weight is always
// present (quantized from the embedding when the model ties them), so every
// backend loads it the same way.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "model/tensor_source.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::model {

inline constexpr const char* kRingserveFormat = "ringserve-int8";
inline constexpr const char* kRingserveFormatVersion = "1";

// Whether a source's metadata marks it as a pre-quantized checkpoint.
bool is_ringserve_checkpoint(const TensorSource& source);

// Writes config.json and model.safetensors (streamed tensor by tensor) into
// out_dir, which is created if missing.
Status save_quantized_checkpoint(const ModelWeights& weights, const std::filesystem::path& out_dir);

}  // namespace ringserve::model
