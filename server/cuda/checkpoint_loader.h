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

#include "cuda/device_model.h"
#include "cuda/page_cache_dma.h"
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

// How the file is read. Pinning host memory is slow on some machines (about
// 1 GB/s on the H200 VM: 512 MiB of slots took 0.45-0.5 s, as long as
// reading 15 GB from the page cache), so the slots are small: enough for
// one read in flight per thread and a few copies queued behind them.
struct CheckpointReadOptions {
  io::ReaderOptions reader;  // pread_threads 0: one per core, at most 16
  size_t slot_bytes = size_t{4} << 20;
  int slots = 0;  // 0: pread threads + 8
  // A cached file: copy straight out of the page cache (page_cache_dma.h)
  // instead of through the slots.
  bool page_cache_dma = false;
  PageCacheDmaOptions dma;
};

Expected<DeviceModel> load_checkpoint_to_device(const GpuCheckpoint& checkpoint, bool resident_bf16,
                                                const WeightPlacement& placement,
                                                cudaStream_t stream, CheckpointLoadStats* stats,
                                                const CheckpointReadOptions& read = {});

}  // namespace ringserve::cuda
