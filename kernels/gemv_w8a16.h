// W8A16 GEMV / skinny GEMM for decode: y[b, r] = scale[r] * sum_k W[r, k] x[b, k]
// (+ bias[r]) for batch 1..8 per pass (larger batches run in passes of 8).
// W is int8 [rows, cols], row-major or in 16x64 tiles (weight_layout.h), with
// one fp32 scale per row; x is bf16.
// Every weight byte is read once per pass, whatever the batch: the batch is
// the N=8 side of an fp16 tensor-core mma (x converted on the fly), the
// weights the M=16 side.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "weight_layout.h"

#ifndef __CUDACC__
#include <string>
#include <vector>

#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

enum class GemvEpilogue {
  kStoreF32,        // out f32 [b, rows] = acc * scale + bias
  kStoreBf16,       // out bf16 [b, rows] = acc * scale + bias
  kResidualAddF32,  // out f32 [b, rows] += acc * scale + bias (the residual stream)
  kSiluMulBf16,     // packed gate/up (see pack_gate_up_rows): out bf16 [b, rows/2] = silu(g) * u
};

struct GemvArgs {
  const int8_t* w = nullptr;
  // kTiled16x64 needs tiled_layout_fits(rows, cols) and 16-byte aligned w
  // and x (the kernels then never take the bounds-checked path).
  WeightLayout layout = WeightLayout::kRowMajor;
  const float* scale = nullptr;
  const float* bias = nullptr;  // may be null
  int rows = 0;
  int cols = 0;
  const __nv_bfloat16* x = nullptr;  // [batch, cols], row stride cols
  int batch = 0;
  void* out = nullptr;
  int ld_out = 0;  // row stride of out in elements; 0 = rows (rows/2 for kSiluMulBf16)
  GemvEpilogue epilogue = GemvEpilogue::kStoreF32;
  // Launch with programmatic dependent launch (sm_90): the kernel may start
  // while the previous kernel in the stream still runs, streaming its first
  // weights, and waits for it before reading x or touching out. Requires
  // compute capability 9.0 (the caller checks).
  bool pdl = false;
};

// Launch shape: `tiles` 16-row mma tiles per block (2 for kSiluMulBf16: one
// gate tile and its up tile), `warps` warps per block splitting the K range,
// `unroll` the kernel variant:
//   0: the original kernel (fixed groups of 8 chunks for one tile, 4 for two;
//      a warp's remaining chunks are loaded and multiplied one at a time).
//      The reference variant: gemv_tuning verifies every other variant
//      against it before choosing one.
//   U > 0: the grouped kernel: every group of U 64-column chunks is loaded
//      (predicated) before its mma, so a warp owning fewer than U chunks
//      still has all its loads in flight at once. U is 4 or 8 for one tile,
//      2 or 4 for two.
// `pipelined` (one tile, U = 2 only): the double-buffered kernel, which loads
// the next pair of chunks while it multiplies the current one.
// `persistent` (grouped kernel, 8 or 16 warps): a grid of only as many
// blocks as are resident at once, each walking row blocks in turn.
// `ring_kb` (48 or 96; 4 or 8 warps, unroll 0): the ring kernel, sm_90 and
// tiled weights only (rows a multiple of 16 * tiles): `warps` consumer warps
// and one producer warp that streams the weights with TMA bulk copies into
// a ring of ring_kb KB of shared memory (gemv_w8a16.cu says why).
struct GemvConfig {
  int tiles = 1;   // 1 or 2
  int warps = 8;   // 4, 8 or 16
  int unroll = 0;  // 0 (original kernel) or U (grouped kernel, see above)
  bool pipelined = false;
  bool persistent = false;
  int ring_kb = 0;  // > 0: the ring kernel
};

// Whether the launch shape is one the kernels are instantiated for.
inline bool gemv_config_valid(const GemvConfig& c) {
  if (c.tiles != 1 && c.tiles != 2) return false;
  if (c.warps != 4 && c.warps != 8 && c.warps != 16) return false;
  if (c.ring_kb != 0)
    return (c.ring_kb == 48 || c.ring_kb == 96) && c.warps <= 8 && c.unroll == 0 && !c.pipelined &&
           !c.persistent;
  if (c.pipelined) return !c.persistent && c.tiles == 1 && c.unroll == 2;
  if (c.persistent && (c.unroll == 0 || c.warps < 8)) return false;
  if (c.unroll == 0) return true;
  return c.tiles == 1 ? (c.unroll == 4 || c.unroll == 8) : (c.unroll == 2 || c.unroll == 4);
}

GemvConfig default_gemv_config(int rows, int cols, GemvEpilogue epilogue);

// Whether two launch shapes add up every output in the same order, and so
// give bitwise the same result for every batch row whatever the batch: the
// same warps splitting K the same way (contiguous ranges in the original
// kernel, interleaved chunks in the others). The tile count, the unroll and
// the ring only change which loads are in flight together.
inline bool same_summation_order(const GemvConfig& a, const GemvConfig& b) {
  const bool a_interleaved = a.unroll > 0 || a.pipelined || a.ring_kb > 0;
  const bool b_interleaved = b.unroll > 0 || b.pipelined || b.ring_kb > 0;
  return a.warps == b.warps && a_interleaved == b_interleaved;
}

#ifndef __CUDACC__
// Every valid launch shape that can serve `epilogue` (gate/up needs two
// tiles): what the start-up tuner, the tests and the benchmarks enumerate.
// The persistent shapes only with_persistent (the tuner offers them only
// when CudaTuning::persistent_gemv asks).
std::vector<GemvConfig> gemv_configs(GemvEpilogue epilogue, bool with_persistent = false);
// The ring kernel's shapes for `epilogue`: only for tiled weights with rows
// a multiple of 16 * tiles, on a GPU where gemv_ring_supported().
std::vector<GemvConfig> gemv_ring_configs(GemvEpilogue epilogue);
// Whether the current device runs the ring kernel (compute capability 9.0+).
bool gemv_ring_supported();
// Whether `config` can serve a matrix of `rows` in `layout`: everything can,
// but the ring kernel needs whole row blocks of tiled weights.
bool gemv_config_fits(const GemvConfig& config, int rows, WeightLayout layout);
// The ring shapes that can serve a matrix of `rows` in `layout` on the
// current device: those of gemv_ring_configs that fit, none where the
// device has no ring kernel. What the tuner and the benchmarks add.
std::vector<GemvConfig> gemv_ring_configs_for(GemvEpilogue epilogue, int rows, WeightLayout layout);
// "t1w8u4", with a trailing "p" for the pipelined kernel, "r" for a
// persistent (resident) grid; "t1w8ring96" for the ring kernel.
std::string describe(const GemvConfig& config);
#endif

#ifndef __CUDACC__
// Errors: kInvalidArgument for shapes the kernel cannot serve (non-positive
// sizes, gate/up rows not a multiple of 32, ...).
Status gemv_w8a16(const GemvArgs& args, cudaStream_t stream);
Status gemv_w8a16(const GemvArgs& args, const GemvConfig& config, cudaStream_t stream);
#endif

namespace detail {
// Unchecked launch (arguments validated by gemv_w8a16); returns the launch error.
cudaError_t gemv_w8a16_launch(const GemvArgs& args, const GemvConfig& config, cudaStream_t stream);
}  // namespace detail

// The gate/up packing the kSiluMulBf16 epilogue expects: rows in groups of 16,
// gate rows [16i, 16i+16) followed by up rows [16i, 16i+16). Returns the
// packed row index of gate row j (up row j is that + 16). Requires
// intermediate % 16 == 0.
#if defined(__CUDACC__)
__host__ __device__
#endif
    inline int
    packed_gate_row(int j) {
  return (j / 16) * 32 + j % 16;
}

}  // namespace ringserve::kernels
