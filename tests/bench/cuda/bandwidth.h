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

// Reads an int8 [rows, cols] matrix as the decode GEMV does, without the
// arithmetic: one block of 8 warps per 16 rows (at most 3 blocks resident
// per SM, as the GEMVs' registers allow), 64-column chunks
// interleaved over the warps, four chunks in flight per warp. `tiled`
// reads the same bytes as if stored in 16 x 64 tiles of 1 KB (row tile by
// row tile, chunk by chunk), so every warp load is 512 contiguous bytes
// instead of 64 bytes of each of 8 rows. What the access pattern alone
// costs. blocks_per_sm > 0: a grid of that many blocks per SM (up to 3), each walking
// tiles in turn (a persistent kernel's structure, without its arithmetic),
// instead of one block per tile. Requires rows % 16 == 0 and cols % 64 == 0.
cudaError_t launch_read_gemv_pattern(const int8_t* w, int rows, int cols, bool tiled,
                                     int blocks_per_sm, uint32_t* sink, cudaStream_t stream);

}  // namespace ringserve::bench
