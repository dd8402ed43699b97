// Loads a Hugging Face bf16 checkpoint straight into a DeviceModel: the
// tensor bytes are read with io::FileReader (O_DIRECT and io_uring where the
// filesystem allows, else the page cache) into pinned slots, copied to a
// device staging buffer and quantized there (kernels::quantize_rows_bf16),
// each stage overlapping the others (cuda/checkpoint_stream.h). The host
// never touches a weight matrix; only norms and biases (a few kB a layer)
// are converted on the CPU.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "cuda/checkpoint_stream.h"
#include "cuda/device_model.h"
#include "io/file_reader.h"
#include "model/config.h"
#include "model/tensor_source.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

struct GpuCheckpoint {
  model::ModelConfig config;
  model::TensorSource source;
};

// The checkpoint at `spec` when this loader can read it: a directory with
// bf16 linear weights and embedding. nullopt (with the reason in `why`) for
// anything else (synthetic specs, ringserve-int8 or f16/f32 checkpoints),
// which model::load_model handles. Errors: a directory that is not a valid
// checkpoint (bad config, bad headers, missing or misshapen tensors).
Expected<std::optional<GpuCheckpoint>> open_gpu_checkpoint(const std::string& spec,
                                                           std::string* why);

struct CheckpointLoadStats {
  uint64_t bytes = 0;  // read from the files
  double seconds = 0.0;
  std::string method;  // the reader's path, e.g. "O_DIRECT + io_uring"
};

Expected<DeviceModel> load_checkpoint_to_device(const GpuCheckpoint& checkpoint, bool resident_bf16,
                                                const WeightPlacement& placement,
                                                cudaStream_t stream, CheckpointLoadStats* stats,
                                                const CheckpointStreamOptions& read = {});

}  // namespace ringserve::cuda
