// The one entry point every engine uses to get weights:
//
//   auto weights = RS_TRY(load_model("/models/DeepSeek-R1-Distill-Qwen-7B", {}));
//
// `spec` is one of
//   DIR                        Hugging Face layout: config.json (+ optional
//                              generation_config.json) and model.safetensors
//                              or model.safetensors.index.json + shards, in
//                              BF16/F16/F32; linear layers are quantized here
//   DIR                        a ringserve-int8 checkpoint from `convert`
//                              (recognized by its metadata; not re-quantized)
//   synthetic:<name>[,...]     random INT8 weights of a manifest's shapes,
//                              generated in memory (see synthetic.h)
//
// Every tensor's presence, dtype and shape is checked against the config
// before use; errors name the file and the tensor. Unknown extra tensors
// (e.g. rotary inv_freq buffers) are ignored with a debug log line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/tensor_source.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::model {

struct LoadStats {
  std::string format;         // "hf-bf16", "ringserve-int8", "synthetic", ...
  uint64_t source_bytes = 0;  // bytes of tensors read (0 for synthetic)
  double seconds = 0.0;       // wall time of the whole load
  double gb_per_s() const {
    return seconds > 0 ? static_cast<double>(source_bytes) / seconds / 1e9 : 0.0;
  }
};

struct LoadOptions {
  int threads = 0;             // 0: hardware concurrency
  uint64_t seed = 0x5eed;      // synthetic models, unless the spec sets seed=
  LoadStats* stats = nullptr;  // filled on success when not null
};

Expected<ModelWeights> load_model(const std::string& spec, const LoadOptions& options);

// Builds ModelWeights from already-opened tensors and a config (the part of
// load_model after the files are open). Exposed for tests and for callers
// that open sources themselves.
Expected<ModelWeights> load_from_source(const ModelConfig& config, const TensorSource& source,
                                        const LoadOptions& options);

// The checks every loader applies to a named tensor (errors name the file
// and the tensor): present, of exactly `shape`, and of a float dtype (BF16,
// F16, F32), or I8 when quantized_int8.
Expected<TensorView> expect_tensor(const TensorSource& source, const std::string& name,
                                   std::vector<int64_t> shape, bool quantized_int8 = false);
// A tensor's elements as fp32 (any float dtype).
std::vector<float> to_floats(const TensorView& v);
// expect_tensor for a 1-D tensor of `size` elements, as fp32.
Expected<std::vector<float>> load_vector(const TensorSource& source, const std::string& name,
                                         int size);

// The tensor names and shapes a Hugging Face Qwen2 checkpoint of this config
// holds, in a stable order (embed, layers 0..N-1, norm, lm_head unless tied).
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};
std::vector<ExpectedTensor> hf_tensor_layout(const ModelConfig& config);

}  // namespace ringserve::model
