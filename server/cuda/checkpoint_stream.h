// Streams tensor bytes from a checkpoint file to the GPU as whole row
// blocks: io::FileReader reads into pinned slots, each chunk is copied to a
// device staging buffer as io::RowBlockPlanner says, and a handler consumes
// every completed block (quantizes it, say) on the same stream. File reads
// overlap the copies and the handler's GPU work; the copies and the handler
// are serialized by the stream, which is what makes reusing the staging safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>

#include "io/file_reader.h"
#include "io/row_blocks.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

// Rows [row_begin, row_end) of tensor `tensor` (an index into the tensors
// passed in), row after row at `device`. Valid only for work the handler
// enqueues on the stream it is given: the next block overwrites it.
struct StagedRows {
  size_t tensor = 0;
  int64_t row_begin = 0;
  int64_t row_end = 0;
  const void* device = nullptr;
};

// Called on the thread that called stream_checkpoint_rows, in file order;
// an error stops the stream and is returned.
using RowsHandler = std::function<Status(const StagedRows&, cudaStream_t)>;

// How the file is read. Pinning host memory is slow on some machines (about
// 1 GB/s on the H200 VM: 512 MiB of slots took 0.45-0.5 s, as long as
// reading 15 GB from the page cache), so the slots are small: one read in
// flight per reader thread and a few copies queued behind them.
struct CheckpointStreamOptions {
  io::ReaderOptions reader;
  size_t slot_bytes = size_t{4} << 20;  // rounded up to a multiple of 4096
  // Pinned slots, one read in flight per slot. 0: reader.pread_threads + 8
  // (8 + 8 when the reader picks its own thread count: at most 8).
  int slots = 0;
};

struct CheckpointStreamStats {
  uint64_t bytes = 0;        // read from the file: the tensors and the gaps between them
  double seconds = 0;        // from the first read to the stream's completion
  double setup_seconds = 0;  // before it: opening the file, pinning the slots
  io::Method method = io::Method::kPreadBuffered;
  double gb_per_s() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
};

// Reads `tensors` (sorted by offset, non-overlapping; see io::TensorExtent)
// of `file` and calls `on_rows` for every block of whole rows staged in
// `staging` (device memory, staging_bytes; a block holds up to
// staging_bytes / row_bytes rows). Returns once everything is enqueued and
// `stream` is synchronized, also on error. Errors: kInvalidArgument (bad
// extents, a row larger than the staging, slots < 1), the reader's errors,
// kResourceExhausted (pinned memory), kInternal (CUDA), or the handler's.
Expected<CheckpointStreamStats> stream_checkpoint_rows(const std::filesystem::path& file,
                                                       std::span<const io::TensorExtent> tensors,
                                                       void* staging, size_t staging_bytes,
                                                       cudaStream_t stream,
                                                       const RowsHandler& on_rows,
                                                       const CheckpointStreamOptions& options = {});

}  // namespace ringserve::cuda
