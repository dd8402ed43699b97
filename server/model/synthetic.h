// Random models of real shapes, for benchmarks and the quick-start demo.
// Deterministic from (config, seed) regardless of the thread count: each
// tensor row draws from its own counter-based stream.
//
// Spec grammar (the part after "synthetic:" in --model):
//   <manifest-name>[,layers=N][,seed=S]
// e.g. "deepseek-r1-distill-qwen-7b", "demo", "deepseek-r1-distill-qwen-7b,layers=2".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "model/config.h"
#include "model/dtype.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::model {

inline constexpr std::string_view kSyntheticPrefix = "synthetic:";

struct SyntheticSpec {
  ModelConfig config;            // the manifest, with overrides applied
  std::optional<uint64_t> seed;  // seed= in the spec, if given
};

// Parses "<name>[,key=value...]" (without the prefix). Errors:
// kNotFound (unknown manifest), kInvalidArgument (bad key or value).
Expected<SyntheticSpec> parse_synthetic_spec(std::string_view spec);

// INT8 weights drawn directly (no float matrix is ever built): q uniform in
// [-127, 127], scales chosen so activations keep unit scale through the
// layers; norms 1, small biases, bf16 embedding ~ N(0, 0.02)-like.
Expected<ModelWeights> make_synthetic_weights(const ModelConfig& config, uint64_t seed,
                                              int threads);

// Writes a Hugging Face layout checkpoint (config.json + model.safetensors)
// with random float weights of `dtype` (BF16, F16 or F32), streaming: memory
// use stays at a few MB whatever the model size. Used for load benchmarks
// (the 15 GB bf16 7B checkpoint) and loader tests.
Status write_random_hf_checkpoint(const ModelConfig& config, const std::filesystem::path& out_dir,
                                  uint64_t seed, DType dtype, int threads);

}  // namespace ringserve::model
