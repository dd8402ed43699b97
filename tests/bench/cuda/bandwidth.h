// Device-memory ceilings for the benchmarks: a streaming copy and a
// read-only pass, both with 16-byte accesses.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ringserve::bench {

cudaError_t launch_copy(const void* src, void* dst, size_t bytes, cudaStream_t stream);
// Reads every byte; folds them into *sink so the loads cannot be elided.
cudaError_t launch_read(const void* src, size_t bytes, uint32_t* sink, cudaStream_t stream);

}  // namespace ringserve::bench
