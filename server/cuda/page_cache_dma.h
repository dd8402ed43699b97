// Reading a cached file without copying it: the file is mapped, chunks of
// the mapping (the page cache's own pages) are page-locked with
// cudaHostRegister, and the GPU copies straight out of them. The copying
// reader (io::FileReader into pinned slots) is bounded by how fast the CPU
// can copy out of the page cache (35-38 GB/s with 16 threads on the H200
// VM); this path is bounded by registration and the link instead.
//
// Registration runs on worker threads ahead of the consumer: chunk k is
// registered while earlier chunks are copied, and unregistered once the
// event the consumer recorded for it has completed. Only for files that are
// in the page cache: registering cold pages would fault them in one by one.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>

#include "io/file_reader.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

struct PageCacheDmaOptions {
  size_t chunk_bytes = size_t{64} << 20;  // rounded up to whole pages
  int threads = 4;                        // registering in parallel
  // Chunks registered at once: one event slot each.
  int ahead() const { return std::max(8, 2 * threads); }
};

// Calls on_chunk for every chunk of [offset, offset + length) of `file`, in
// order, on the calling thread. Chunk c's bytes are registered host memory
// until the handler's work is done: the handler must record events[c.slot]
// (an event per slot, options.ahead() of them, created by the caller) after the last
// copy out of the chunk; the chunk is unregistered when that event completes.
// `stream` is the one the handler enqueues its copies on: after a failure
// it is drained before anything is unregistered. Everything is unregistered
// before this returns. Errors: kUnsupported (the device or driver refuses to
// register the mapping, before any chunk was handed out: use the copying
// reader), kIoError, kInternal (CUDA), or the handler's.
Expected<io::ReadStats> read_page_cache_dma(const std::filesystem::path& file, uint64_t offset,
                                            uint64_t length, std::span<const cudaEvent_t> events,
                                            cudaStream_t stream, const io::ChunkHandler& on_chunk,
                                            const PageCacheDmaOptions& options = {});

}  // namespace ringserve::cuda
