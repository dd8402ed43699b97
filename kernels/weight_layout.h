// Where byte (row, col) of an int8 weight matrix lives. Row-major is what a
// checkpoint holds and what the prefill GEMMs want; the decode GEMVs stream
// faster from 16x64 tiles: a GEMV warp reads 16 bytes of each of 16 rows per
// 64-column chunk, which row-major scatters over 16 rows (16 DRAM bursts of
// 64 bytes, K bytes apart) but a tile holds as one contiguous kilobyte.
// Measured with loads alone at the 7B shapes on the H200 (cuda_bench's
// "GEMV loads" and "tiled" columns, docs/BENCHMARKS.md): 42.1 against
// 34.8 us for gate/up, 29.5 against 20.3 for down_proj.
//
// Tiled: the rows in blocks of 16; each block is its 64-column chunks in
// order, each chunk its 16 rows of 64 bytes. A 16-row block covers the same
// bytes in either layout, so retiling moves nothing between row blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ringserve::kernels {

enum class WeightLayout : uint8_t {
  kRowMajor,
  kTiled16x64,  // needs rows % 16 == 0 and cols % 64 == 0 (tiled_layout_fits)
};

inline constexpr int kTileRows = 16, kTileCols = 64;

#if defined(__CUDACC__)
#define RINGSERVE_HD __host__ __device__
#else
#define RINGSERVE_HD
#endif

RINGSERVE_HD inline bool tiled_layout_fits(int rows, int cols) {
  return rows > 0 && cols > 0 && rows % kTileRows == 0 && cols % kTileCols == 0;
}

// Byte offset of (row, col) in a tiled matrix of `cols` columns.
RINGSERVE_HD inline size_t tiled_offset(int row, int col, int cols) {
  return static_cast<size_t>(row / kTileRows) * kTileRows * cols +
         static_cast<size_t>(col / kTileCols) * (kTileRows * kTileCols) +
         static_cast<size_t>(row % kTileRows) * kTileCols + col % kTileCols;
}

#undef RINGSERVE_HD

// Host-side retiling of `rows` (a multiple of 16) rows in place: `to_tiled`
// turns row-major into tiled, otherwise back. One 16-row block at a time,
// through a block-sized buffer.
inline void retile_rows_host(int8_t* w, int rows, int cols, bool to_tiled) {
  const size_t block = static_cast<size_t>(kTileRows) * cols;
  std::vector<int8_t> tmp(block);
  for (int r0 = 0; r0 < rows; r0 += kTileRows) {
    int8_t* b = w + static_cast<size_t>(r0) * cols;
    std::memcpy(tmp.data(), b, block);
    for (int r = 0; r < kTileRows; ++r)
      for (int c = 0; c < cols; c += kTileCols) {
        const size_t rm = static_cast<size_t>(r) * cols + c, tl = tiled_offset(r, c, cols);
        std::memcpy(b + (to_tiled ? tl : rm), tmp.data() + (to_tiled ? rm : tl), kTileCols);
      }
  }
}

}  // namespace ringserve::kernels
