#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "bulk_copy.cuh"
#include "common.cuh"
#include "gemv_w8a16.h"

namespace ringserve::kernels {
namespace {

using detail::bf16x2_to_f16x2;
using detail::int8x4_to_f16x2;
using detail::mma_f16_16816;

// The multiplication runs in fp16, not bf16: int8 weights convert to fp16
// in half the instructions (see int8x4_to_f16x2), and both are exact for
// int8. On the H200 that made the GEMVs 1-8 % faster and decode 5 % faster
// (docs/BENCHMARKS.md). The bf16 activations are scaled by 2^-4 on the way
// to fp16, so values below 2^20 stay finite; the conversion is exact for
// |x| >= 2^-12 and off by at most 2^-21 below, and the products are summed
// in fp32 as before. reduce_and_store undoes the scale.
constexpr float kXScale = 0.0625f, kXUnscale = 16.0f;

// One K chunk is 64 columns: lane (g, t) of a warp (g = lane / 4, t = lane % 4)
// holds 16 consecutive bytes of weight rows g and g + 8 and 16 consecutive
// activations of batch row g. The dot product does not care in which order K
// is summed, so the chunk's physical columns [16t + 4j, 16t + 4j + 4) are
// presented to mma j as its logical columns {2t, 2t+1, 2t+8, 2t+9} on both the
// A (weights) and B (activations) side. Every load is 16 bytes wide and no
// shuffle is needed.
struct Chunk {
  uint4 w[2];  // rows g, g + 8
};

__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Lane (g, t)'s 16 weight bytes of row r in chunk c are at
// lane_weights(...) + c * chunk_stride(tiled), in either layout
// (weight_layout.h): row-major W + r K + 64 c + 16 t, tiled
// W + (r / 16) 16 K + 1024 c + (r % 16) 64 + 16 t.
__device__ __forceinline__ const int8_t* lane_weights(const int8_t* W, int r, int K, int t,
                                                      bool tiled) {
  return tiled ? W + static_cast<size_t>(r & ~15) * K + (r & 15) * 64 + t * 16
               : W + static_cast<size_t>(r) * K + t * 16;
}
// Row r of a row-major W (row 0 for rows past the end: a valid address
// whose loads the caller masks).
__device__ __forceinline__ const int8_t* row_ptr(const int8_t* W, int r, int rows, int K) {
  return W + static_cast<size_t>(r < rows ? r : 0) * K;
}
__device__ __forceinline__ int chunk_stride(bool tiled) {
  return tiled ? kTileRows * kTileCols : 64;
}

// The b operands of a chunk's four mmas: activations 4j..4j+3 of this
// lane's 16 (words 2j and 2j+1 of x[0..1]) in fp16, scaled by kXScale.
struct XFrag {
  uint32_t b[8];
};

__device__ __forceinline__ XFrag x_frag(const uint4 (&x)[2]) {
  XFrag f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    f.b[2 * j] = bf16x2_to_f16x2(word(x[j / 2], (j % 2) * 2), kXScale);
    f.b[2 * j + 1] = bf16x2_to_f16x2(word(x[j / 2], (j % 2) * 2 + 1), kXScale);
  }
  return f;
}

__device__ __forceinline__ void mma_chunk(float (&acc)[4], const Chunk& c, const XFrag& x) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    uint32_t lo_g, hi_g, lo_g8, hi_g8;
    int8x4_to_f16x2(word(c.w[0], j), lo_g, hi_g);
    int8x4_to_f16x2(word(c.w[1], j), lo_g8, hi_g8);
    mma_f16_16816(acc, lo_g, lo_g8, hi_g, hi_g8, x.b[2 * j], x.b[2 * j + 1]);
  }
}

// With two tiles the compiler converts x once for both calls.
__device__ __forceinline__ void mma_chunk(float (&acc)[4], const Chunk& c, const uint4 (&x)[2]) {
  mma_chunk(acc, c, x_frag(x));
}

// Bounds-checked chunk load for the last, partial chunk (cols % 64 != 0) and
// for matrices whose rows are not 16-byte aligned.
__device__ __forceinline__ void load_chunk_checked(const int8_t* w0, const int8_t* w1, bool v0,
                                                   bool v1, const __nv_bfloat16* xr, bool vx,
                                                   int k0, int K, Chunk& c, uint4 (&x)[2]) {
  uint32_t wa[4] = {0, 0, 0, 0}, wb[4] = {0, 0, 0, 0}, xs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
  for (int e = 0; e < 16; ++e) {
    const int k = k0 + e;
    if (k < K) {
      if (v0) wa[e / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(w0[k])) << (8 * (e % 4));
      if (v1) wb[e / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(w1[k])) << (8 * (e % 4));
      if (vx) {
        const uint32_t bits = __bfloat16_as_ushort(xr[k]);
        xs[e / 2] |= bits << (16 * (e % 2));
      }
    }
  }
  c.w[0] = make_uint4(wa[0], wa[1], wa[2], wa[3]);
  c.w[1] = make_uint4(wb[0], wb[1], wb[2], wb[3]);
  x[0] = make_uint4(xs[0], xs[1], xs[2], xs[3]);
  x[1] = make_uint4(xs[4], xs[5], xs[6], xs[7]);
}

// Accumulator fragment: acc[0..1] = (row g, batch 2t, 2t+1), acc[2..3] =
// (row g+8, batch 2t, 2t+1). Every warp's K-split partials go to shared
// memory; after a barrier, sum_and_store adds them up (warp 0 first, always
// in the same order) and applies the epilogue. Shared by every variant.
template <int TILES, int WARPS>
using Partials = float[WARPS][TILES][16][9];  // +1 column: fewer bank conflicts

template <int TILES, int WARPS>
__device__ __forceinline__ void store_partials(Partials<TILES, WARPS>& part,
                                               const float (&acc)[TILES][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < TILES; ++i) {
    part[warp][i][g][2 * t] = acc[i][0];
    part[warp][i][g][2 * t + 1] = acc[i][1];
    part[warp][i][g + 8][2 * t] = acc[i][2];
    part[warp][i][g + 8][2 * t + 1] = acc[i][3];
  }
}

template <int TILES, int WARPS, GemvEpilogue EPI>
__device__ __forceinline__ void sum_and_store(const Partials<TILES, WARPS>& part,
                                              const float* __restrict__ scale,
                                              const float* __restrict__ bias, int rows, int batch,
                                              void* __restrict__ out, int ld_out, int row_block) {
  const int row0 = row_block * 16 * TILES;
  constexpr int kOutputs = (EPI == GemvEpilogue::kSiluMulBf16 ? 1 : TILES) * 128;
  for (int idx = threadIdx.x; idx < kOutputs; idx += WARPS * 32) {
    const int tile = idx / 128, r = (idx / 8) % 16, n = idx % 8;
    if (n >= batch) continue;
    auto total = [&](int tl) {
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < WARPS; ++w) s += part[w][tl][r][n];
      return s * kXUnscale;
    };
    if constexpr (EPI == GemvEpilogue::kSiluMulBf16) {
      const int gr = row0 + r, ur = row0 + 16 + r;
      if (ur >= rows) continue;
      float gv = total(0) * scale[gr], uv = total(1) * scale[ur];
      if (bias) {
        gv += bias[gr];
        uv += bias[ur];
      }
      const int j = row_block * 16 + r;
      static_cast<__nv_bfloat16*>(out)[static_cast<size_t>(n) * ld_out + j] =
          __float2bfloat16(detail::silu(gv) * uv);
    } else {
      const int row = row0 + tile * 16 + r;
      if (row >= rows) continue;
      float v = total(tile) * scale[row];
      if (bias) v += bias[row];
      const size_t o = static_cast<size_t>(n) * ld_out + row;
      if constexpr (EPI == GemvEpilogue::kStoreF32) {
        static_cast<float*>(out)[o] = v;
      } else if constexpr (EPI == GemvEpilogue::kStoreBf16) {
        static_cast<__nv_bfloat16*>(out)[o] = __float2bfloat16(v);
      } else {
        static_cast<float*>(out)[o] += v;
      }
    }
  }
}

template <int TILES, int WARPS, GemvEpilogue EPI>
__device__ __forceinline__ void reduce_and_store(const float (&acc)[TILES][4],
                                                 const float* __restrict__ scale,
                                                 const float* __restrict__ bias, int rows,
                                                 int batch, void* __restrict__ out, int ld_out,
                                                 int row_block) {
  __shared__ Partials<TILES, WARPS> part;
  store_partials<TILES, WARPS>(part, acc);
  __syncthreads();
  sum_and_store<TILES, WARPS, EPI>(part, scale, bias, rows, batch, out, ld_out, row_block);
}

template <int TILES, int WARPS, GemvEpilogue EPI>
__global__ void __launch_bounds__(WARPS * 32)
    gemv_w8a16_kernel(const int8_t* __restrict__ W, const float* __restrict__ scale,
                      const float* __restrict__ bias, int rows, int K,
                      const __nv_bfloat16* __restrict__ X, int batch, void* __restrict__ out,
                      int ld_out, bool vec, bool tiled) {
  // Chunks in flight per warp before the first mma: enough independent 16-byte
  // loads to cover DRAM latency with few warps per SM.
  // Activations are re-read from L1/L2 at compute time so registers go to
  // weight bytes in flight (8 KB per warp for one tile).
  constexpr int U = TILES == 1 ? 8 : 4;
  // Under programmatic dependent launch: wait for the producer of X (and of
  // `out`, for the residual epilogue) before anything else.
  detail::pdl_wait();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * 16 * TILES;

  const int8_t* wl[TILES][2];
  bool rvalid[TILES][2];
#pragma unroll
  for (int i = 0; i < TILES; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + i * 16 + g + 8 * h;
      rvalid[i][h] = r < rows;
      wl[i][h] = lane_weights(W, rvalid[i][h] ? r : 0, K, t, tiled);
    }
  }
  const int cstride = chunk_stride(tiled);
  const bool xvalid = g < batch;
  const __nv_bfloat16* xrow = X + static_cast<size_t>(xvalid ? g : 0) * K;

  const int nchunks = (K + 63) / 64;
  const int per_warp = (nchunks + WARPS - 1) / WARPS;
  const int c_begin = min(nchunks, warp * per_warp);
  const int c_end = min(nchunks, c_begin + per_warp);
  // Chunks that are whole and aligned take the vector path.
  const int full_end = vec ? min(c_end, K / 64) : c_begin;

  float acc[TILES][4];
#pragma unroll
  for (int i = 0; i < TILES; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

  const uint4 zero = make_uint4(0, 0, 0, 0);
  int c = c_begin;
  for (; c + U <= full_end; c += U) {
    Chunk ch[U][TILES];
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int i = 0; i < TILES; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          ch[u][i].w[h] = rvalid[i][h] ? detail::ld_stream_u4(wl[i][h] + (c + u) * cstride) : zero;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k0 = (c + u) * 64 + t * 16;
      const uint4* xp = reinterpret_cast<const uint4*>(xrow + k0);
      const uint4 xv[2] = {xvalid ? __ldg(xp) : zero, xvalid ? __ldg(xp + 1) : zero};
#pragma unroll
      for (int i = 0; i < TILES; ++i) mma_chunk(acc[i], ch[u][i], xv);
    }
  }
  for (; c < c_end; ++c) {
    const int k0 = c * 64 + t * 16;
    uint4 xv[2];
#pragma unroll
    for (int i = 0; i < TILES; ++i) {
      Chunk ch;
      if (c < full_end) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          ch.w[h] = rvalid[i][h] ? detail::ld_stream_u4(wl[i][h] + c * cstride) : zero;
        const uint4* xp = reinterpret_cast<const uint4*>(xrow + k0);
        xv[0] = xvalid ? __ldg(xp) : zero;
        xv[1] = xvalid ? __ldg(xp + 1) : zero;
      } else {  // row-major only (a tiled matrix has whole, aligned chunks)
        load_chunk_checked(row_ptr(W, row0 + i * 16 + g, rows, K),
                           row_ptr(W, row0 + i * 16 + g + 8, rows, K), rvalid[i][0], rvalid[i][1],
                           xrow, xvalid, k0, K, ch, xv);
      }
      mma_chunk(acc[i], ch, xv);
    }
  }

  detail::pdl_launch_dependents();  // see the grouped kernel
  reduce_and_store<TILES, WARPS, EPI>(acc, scale, bias, rows, batch, out, ld_out, blockIdx.x);
}

// The grouped variant (GemvConfig::unroll = U > 0). Same fragment layout as
// the kernel above, but every group of U chunks is loaded with predication:
// a warp with fewer than U whole chunks left (qkv and o_proj at 8 or 16 warps
// own 4-7 chunks each) still issues all of its loads before the first mma,
// instead of loading and multiplying one chunk at a time (one DRAM latency
// per chunk), and the chunks are interleaved over the warps (see below). The loads are not
// `volatile`, so the compiler is free to hoist them. The partial last chunk (cols % 64 != 0) and
// unaligned matrices go through the checked path, spread over the warps.
// One row block (16 * TILES rows) of the grouped kernel; `last`: the
// block's last row block, after whose multiply the next kernel may launch.
template <int TILES, int WARPS, int U, GemvEpilogue EPI>
__device__ __forceinline__ void grouped_row_block(const int8_t* __restrict__ W,
                                                  const float* __restrict__ scale,
                                                  const float* __restrict__ bias, int rows, int K,
                                                  const __nv_bfloat16* __restrict__ X, int batch,
                                                  void* __restrict__ out, int ld_out, bool vec,
                                                  bool tiled, int row_block, bool last) {
  static_assert(TILES * U <= 8, "weight registers: at most 8 chunk-tiles in flight per warp");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = row_block * 16 * TILES;

  const int8_t* wl[TILES][2];
  bool rvalid[TILES][2];
#pragma unroll
  for (int i = 0; i < TILES; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + i * 16 + g + 8 * h;
      rvalid[i][h] = r < rows;
      wl[i][h] = lane_weights(W, rvalid[i][h] ? r : 0, K, t, tiled);
    }
  }
  const int cstride = chunk_stride(tiled);
  const bool xvalid = g < batch;
  const __nv_bfloat16* xrow = X + static_cast<size_t>(xvalid ? g : 0) * K;

  const int nchunks = (K + 63) / 64;
  const int nfull = vec ? K / 64 : 0;  // whole, 16-byte aligned chunks
  // Warp w owns whole chunks w, w + WARPS, w + 2 WARPS, ...: at any moment
  // the block's warps stream one contiguous span of WARPS * 64 bytes of each
  // of its rows (DRAM-friendly), unlike the original kernel's contiguous
  // per-warp ranges that scatter a block's loads over the whole row.
  const int mine = nfull > warp ? (nfull - warp + WARPS - 1) / WARPS : 0;

  float acc[TILES][4];
#pragma unroll
  for (int i = 0; i < TILES; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

  const uint4 zero = make_uint4(0, 0, 0, 0);
  // j and mine are warp-uniform, so every branch below is too (mma.sync
  // needs the whole warp).
  for (int j = 0; j < mine; j += U) {
    Chunk ch[U][TILES];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const bool live = j + u < mine;
      const int c = (j + u) * WARPS + warp;
#pragma unroll
      for (int i = 0; i < TILES; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          ch[u][i].w[h] = live && rvalid[i][h] ? detail::ld_nc_u4(wl[i][h] + c * cstride) : zero;
      }
    }
    // Weights never change, so the first group's loads may be in flight
    // before the producer of X has finished (programmatic dependent launch);
    // X is read only after this. A no-op once satisfied.
    detail::pdl_wait();
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (j + u < mine) {
        const int k0 = ((j + u) * WARPS + warp) * 64 + t * 16;
        const uint4* xp = reinterpret_cast<const uint4*>(xrow + k0);
        const uint4 xv[2] = {xvalid ? __ldg(xp) : zero, xvalid ? __ldg(xp + 1) : zero};
#pragma unroll
        for (int i = 0; i < TILES; ++i) mma_chunk(acc[i], ch[u][i], xv);
      }
    }
  }
  detail::pdl_wait();  // for warps without whole chunks
  // Row-major only: a tiled matrix has whole, aligned chunks.
  for (int c = nfull + warp; c < nchunks; c += WARPS) {
    const int k0 = c * 64 + t * 16;
#pragma unroll
    for (int i = 0; i < TILES; ++i) {
      Chunk ch;
      uint4 xv[2];
      load_chunk_checked(row_ptr(W, row0 + i * 16 + g, rows, K),
                         row_ptr(W, row0 + i * 16 + g + 8, rows, K), rvalid[i][0], rvalid[i][1],
                         xrow, xvalid, k0, K, ch, xv);
      mma_chunk(acc[i], ch, xv);
    }
  }

  // Under programmatic launch the next kernel may start once every block has
  // passed this point: during this kernel's tail (reduction, stores, the last
  // blocks), not at its start. Triggering at the start let the kernels after
  // this one launch in a cascade whose waiting blocks held SM slots and
  // whose early weight loads competed with this kernel's, and measured slower.
  if (last) detail::pdl_launch_dependents();
  reduce_and_store<TILES, WARPS, EPI>(acc, scale, bias, rows, batch, out, ld_out, row_block);
}

// PERSISTENT (GemvConfig::persistent): the grid holds only as many blocks
// as fit on the GPU at once, each walking row blocks blockIdx.x,
// + gridDim.x, ...: no block starts after the first wave, so no SM waits for
// a new block's first loads while its others finish. The row blocks share
// the reduction's shared memory, hence the barrier between them.
template <int TILES, int WARPS, int U, GemvEpilogue EPI, bool PERSISTENT>
__global__ void __launch_bounds__(WARPS * 32)
    gemv_w8a16_grouped_kernel(const int8_t* __restrict__ W, const float* __restrict__ scale,
                              const float* __restrict__ bias, int rows, int K,
                              const __nv_bfloat16* __restrict__ X, int batch,
                              void* __restrict__ out, int ld_out, bool vec, bool tiled) {
  if constexpr (!PERSISTENT) {
    grouped_row_block<TILES, WARPS, U, EPI>(W, scale, bias, rows, K, X, batch, out, ld_out, vec,
                                            tiled, blockIdx.x, true);
  } else {
    const int row_blocks = (rows + 16 * TILES - 1) / (16 * TILES);
    for (int rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
      const bool last = rb + static_cast<int>(gridDim.x) >= row_blocks;
      grouped_row_block<TILES, WARPS, U, EPI>(W, scale, bias, rows, K, X, batch, out, ld_out, vec,
                                              tiled, rb, last);
      if (!last) __syncthreads();
    }
  }
}

// The double-buffered variant (GemvConfig::pipelined): one tile, chunks in
// pairs, interleaved over the warps as in the grouped kernel, but the next
// pair's weights and activations are loaded before the current pair is
// multiplied, so a warp's loads stay in flight while it converts and
// multiplies. Larger groups or two tiles per stage cost registers (two
// stages of four chunks took 158 per thread, one block per SM) and measured
// slower; pairs take about 90.
template <int WARPS, GemvEpilogue EPI>
__global__ void __launch_bounds__(WARPS * 32)
    gemv_w8a16_pipelined_kernel(const int8_t* __restrict__ W, const float* __restrict__ scale,
                                const float* __restrict__ bias, int rows, int K,
                                const __nv_bfloat16* __restrict__ X, int batch,
                                void* __restrict__ out, int ld_out, bool vec, bool tiled) {
  constexpr int U = 2;
  struct Stage {
    Chunk ch[U];
    uint4 x[U][2];
  };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * 16;

  const int8_t* wl[2];
  bool rvalid[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row0 + g + 8 * h;
    rvalid[h] = r < rows;
    wl[h] = lane_weights(W, rvalid[h] ? r : 0, K, t, tiled);
  }
  const int cstride = chunk_stride(tiled);
  const bool xvalid = g < batch;
  const __nv_bfloat16* xrow = X + static_cast<size_t>(xvalid ? g : 0) * K;

  const int nchunks = (K + 63) / 64;
  const int nfull = vec ? K / 64 : 0;
  const int mine = nfull > warp ? (nfull - warp + WARPS - 1) / WARPS : 0;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // Stage-local chunk u of the warp's pair starting at j (j, u warp-uniform).
  auto chunk = [&](int j, int u) { return (j + u) * WARPS + warp; };
  auto offset = [&](int j, int u) { return chunk(j, u) * 64 + t * 16; };
  auto load_weights = [&](Stage& s, int j) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const bool live = j + u < mine;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        s.ch[u].w[h] = live && rvalid[h] ? detail::ld_nc_u4(wl[h] + chunk(j, u) * cstride) : zero;
    }
  };
  auto load_x = [&](Stage& s, int j) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const bool live = j + u < mine && xvalid;
      const uint4* xp = reinterpret_cast<const uint4*>(xrow + offset(j, u));
      s.x[u][0] = live ? __ldg(xp) : zero;
      s.x[u][1] = live ? __ldg(xp + 1) : zero;
    }
  };
  float acc[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
  auto multiply = [&](const Stage& s, int j) {
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (j + u < mine) mma_chunk(acc[0], s.ch[u], s.x[u]);
  };

  Stage a, b;
  load_weights(a, 0);
  detail::pdl_wait();  // weights may stream before the producer of X is done
  load_x(a, 0);
  for (int j = 0; j < mine; j += 2 * U) {
    load_weights(b, j + U);
    load_x(b, j + U);
    multiply(a, j);
    if (j + U >= mine) break;
    load_weights(a, j + 2 * U);
    load_x(a, j + 2 * U);
    multiply(b, j + U);
  }
  for (int c = nfull + warp; c < nchunks; c += WARPS) {
    Chunk ch;
    uint4 xv[2];
    load_chunk_checked(row_ptr(W, row0 + g, rows, K), row_ptr(W, row0 + g + 8, rows, K), rvalid[0],
                       rvalid[1], xrow, xvalid, c * 64 + t * 16, K, ch, xv);
    mma_chunk(acc[0], ch, xv);
  }

  detail::pdl_launch_dependents();  // see the grouped kernel
  reduce_and_store<1, WARPS, EPI>(acc, scale, bias, rows, batch, out, ld_out, blockIdx.x);
}

// The ring variant (GemvConfig::ring_kb, sm_90, tiled weights): warp
// specialisation instead of loads in registers. One producer warp (the
// block's last) streams the block's row blocks, WARPS chunks of each tile
// at a time, with TMA bulk copies into a ring of shared-memory stages; the
// WARPS consumer warps wait on a stage's mbarrier, multiply their chunk of
// it (warp w takes chunk w, as in the grouped kernel: the same summation
// order, so the tuner may pair the two) and hand the stage back. So the
// bytes in flight are set by the ring's size, not by registers, and a
// consumer's arithmetic never holds up the next loads. The grid is
// persistent, every block walking the same number of row blocks (one fewer
// for some), and the producer needs no input, so under programmatic launch the
// weights start streaming while the previous kernel still runs.
// The activations are read (from L1) and converted chunk by chunk, as in the
// other variants: holding a warp's converted activations in registers for
// all its row blocks took 130 registers a thread and one block per SM.
// Under programmatic launch the producer lets the next kernel launch once
// it has issued its last copy: the block then only drains its ring, and
// the next kernel's blocks, where they fit beside it, start streaming.
constexpr int kMaxRingStages = 32;

template <int TILES, int WARPS, GemvEpilogue EPI>
__global__ void __launch_bounds__((WARPS + 1) * 32)
    gemv_w8a16_ring_kernel(const int8_t* __restrict__ W, const float* __restrict__ scale,
                           const float* __restrict__ bias, int rows, int K,
                           const __nv_bfloat16* __restrict__ X, int batch, void* __restrict__ out,
                           int ld_out, int stages) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kTileStage = WARPS * kTileRows * kTileCols;  // one tile's chunks of a stage
  constexpr int kStageBytes = TILES * kTileStage;
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ uint64_t full[kMaxRingStages], empty[kMaxRingStages];
  __shared__ Partials<TILES, WARPS> part;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int nchunks = K / kTileCols;
  const int per_row = (nchunks + WARPS - 1) / WARPS;  // stages per row block
  const int row_blocks = rows / (16 * TILES);
  const int bid = static_cast<int>(blockIdx.x), nblocks = static_cast<int>(gridDim.x);
  const int mine = row_blocks > bid ? (row_blocks - bid + nblocks - 1) / nblocks : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      detail::mbar_init(&full[s], 1);
      detail::mbar_init(&empty[s], WARPS);
    }
    detail::mbar_init_fence();
  }
  __syncthreads();

  if (warp == WARPS) {  // the producer: weights only, so it never waits for the predecessor
    if (lane == 0) {
      const int total = mine * per_row;
      for (int s = 0; s < total; ++s) {
        const int slot = s % stages, round = s / stages;
        if (round > 0) detail::mbar_wait(&empty[slot], (round - 1) & 1);
        const int rb = bid + (s / per_row) * nblocks, i = s % per_row;
        const int n = min(WARPS, nchunks - i * WARPS);
        const uint32_t bytes = static_cast<uint32_t>(n) * kTileRows * kTileCols;
        detail::mbar_arrive_expect_tx(&full[slot], TILES * bytes);
#pragma unroll
        for (int tl = 0; tl < TILES; ++tl)
          detail::bulk_copy_g2s(ring + slot * kStageBytes + tl * kTileStage,
                                W + static_cast<size_t>(rb * TILES + tl) * kTileRows * K +
                                    static_cast<size_t>(i) * kTileStage,
                                bytes, &full[slot]);
      }
      detail::pdl_launch_dependents();
    }
    return;
  }

  const int g = lane >> 2, t = lane & 3;
  const bool xvalid = g < batch;
  const __nv_bfloat16* xrow = X + static_cast<size_t>(xvalid ? g : 0) * K;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  auto x_of = [&](int c) {
    uint4 x[2] = {zero, zero};
    if (xvalid && c < nchunks) {
      const uint4* xp = reinterpret_cast<const uint4*>(xrow + c * kTileCols + t * 16);
      x[0] = __ldg(xp);
      x[1] = __ldg(xp + 1);
    }
    return x_frag(x);
  };
  // Stage s holds chunks [i WARPS, i WARPS + n) of each tile of its row
  // block; this warp multiplies chunk c = i WARPS + warp, if there is one.
  auto consume = [&](float(&acc)[TILES][4], int s, int c, const XFrag& xf) {
    const int slot = s % stages;
    detail::mbar_wait(&full[slot], (s / stages) & 1);
    if (c < nchunks) {
      const uint8_t* base =
          ring + slot * kStageBytes + warp * kTileRows * kTileCols + g * 64 + t * 16;
#pragma unroll
      for (int tl = 0; tl < TILES; ++tl) {
        Chunk ch;
        ch.w[0] = *reinterpret_cast<const uint4*>(base + tl * kTileStage);
        ch.w[1] = *reinterpret_cast<const uint4*>(base + tl * kTileStage + 8 * 64);
        mma_chunk(acc[tl], ch, xf);
      }
    }
    __syncwarp();
    if (lane == 0) detail::mbar_arrive(&empty[slot]);
  };

  detail::pdl_wait();  // X (and, for the residual, out) belong to the predecessor until here
  for (int r = 0; r < mine; ++r) {
    float acc[TILES][4];
#pragma unroll
    for (int i = 0; i < TILES; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    for (int j = 0; j < per_row; ++j) {
      const int c = j * WARPS + warp;
      consume(acc, r * per_row + j, c, x_of(c));  // x is loaded before the stage is waited for
    }
    store_partials<TILES, WARPS>(part, acc);
    detail::named_barrier(1, WARPS * 32);
    sum_and_store<TILES, WARPS, EPI>(part, scale, bias, rows, batch, out, ld_out,
                                     bid + r * nblocks);
    detail::named_barrier(1, WARPS * 32);  // the next row block rewrites part
  }
#endif
}

// How many blocks of `kernel` the whole GPU holds at once, asked once per
// kernel and device (a decode step launches 113 GEMVs; without graphs each
// would ask). 0 if the runtime cannot say.
int resident_grid(const void* kernel, int threads, size_t smem = 0) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, size_t>, int> known;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  std::lock_guard lock(mu);
  const auto key = std::make_tuple(kernel, device, smem);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  int sms = 0, per_sm = 0, optin = 0;
  cudaFuncAttributes attr{};
  bool ok = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
            cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
                cudaSuccess &&
            cudaFuncGetAttributes(&attr, kernel) == cudaSuccess;
  // Over 48 KB of shared memory in all needs an opt-in, set once to the
  // most this kernel can have so that no launch shape lowers it for another.
  if (ok && smem + attr.sharedSizeBytes > 48 * 1024)
    ok = smem + attr.sharedSizeBytes <= static_cast<size_t>(optin) &&
         cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              optin - static_cast<int>(attr.sharedSizeBytes)) == cudaSuccess;
  if (!ok ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess)
    sms = per_sm = 0;
  return known[key] = sms * per_sm;
}

// The ring kernel's grid: as many blocks as are resident at once, fewer
// where that evens out the row blocks each one walks.
template <int TILES, int WARPS, GemvEpilogue EPI>
cudaError_t launch_ring(const GemvConfig& cfg, const GemvArgs& a, const __nv_bfloat16* x, void* out,
                        int batch, int ld_out, cudaStream_t stream) {
  constexpr int kStageBytes = TILES * WARPS * kTileRows * kTileCols;
  const auto kernel = gemv_w8a16_ring_kernel<TILES, WARPS, EPI>;
  const int stages = std::clamp(cfg.ring_kb * 1024 / kStageBytes, 2, kMaxRingStages);
  const size_t smem = static_cast<size_t>(stages) * kStageBytes;
  const int threads = (WARPS + 1) * 32;
  const int wave = resident_grid(reinterpret_cast<const void*>(kernel), threads, smem);
  if (wave <= 0) return cudaErrorInvalidConfiguration;
  const int row_blocks = a.rows / (16 * TILES);
  const int per_block = (row_blocks + wave - 1) / wave;
  const dim3 grid((row_blocks + per_block - 1) / per_block);
  return detail::launch_maybe_pdl(kernel, grid, dim3(threads), smem, stream, a.pdl, a.w, a.scale,
                                  a.bias, a.rows, a.cols, x, batch, out, ld_out, stages);
}

// Every GEMV kernel calls pdl_wait() before touching X or `out`, so a.pdl may
// launch it with the programmatic-serialization attribute.
template <int TILES, int WARPS, GemvEpilogue EPI>
cudaError_t launch(const GemvConfig& cfg, const GemvArgs& a, const __nv_bfloat16* x, void* out,
                   int batch, int ld_out, bool vec, cudaStream_t stream) {
  const int rows_per_block = 16 * TILES;
  const dim3 grid((a.rows + rows_per_block - 1) / rows_per_block), block(WARPS * 32);
  const bool tiled = a.layout == WeightLayout::kTiled16x64;
  // Unroll values per tile count: 4 or 8 for one tile, 2 or 4 for two (the
  // checked API rejects anything else); 0 is the original kernel.
  constexpr int kSmall = TILES == 1 ? 4 : 2, kLarge = TILES == 1 ? 8 : 4;
  auto go = [&](auto kernel) {
    return detail::launch_maybe_pdl(kernel, grid, block, 0, stream, a.pdl, a.w, a.scale, a.bias,
                                    a.rows, a.cols, x, batch, out, ld_out, vec, tiled);
  };
  if (cfg.ring_kb > 0) {
    if constexpr (WARPS <= 8)
      return launch_ring<TILES, WARPS, EPI>(cfg, a, x, out, batch, ld_out, stream);
    return cudaErrorInvalidValue;  // gemv_config_valid: ring shapes have 4 or 8 warps
  }
  if constexpr (TILES == 1) {
    if (cfg.pipelined) return go(gemv_w8a16_pipelined_kernel<WARPS, EPI>);
  }
  if constexpr (WARPS >= 8) {  // the shapes gemv_config_valid allows persistent
    if (cfg.persistent) {
      auto resident = [&](auto kernel) {
        const int wave = resident_grid(reinterpret_cast<const void*>(kernel), block.x);
        if (wave <= 0) return cudaErrorInvalidConfiguration;
        return detail::launch_maybe_pdl(kernel, dim3(std::min<unsigned>(grid.x, wave)), block, 0,
                                        stream, a.pdl, a.w, a.scale, a.bias, a.rows, a.cols, x,
                                        batch, out, ld_out, vec, tiled);
      };
      if (cfg.unroll == kSmall)
        return resident(gemv_w8a16_grouped_kernel<TILES, WARPS, kSmall, EPI, true>);
      return resident(gemv_w8a16_grouped_kernel<TILES, WARPS, kLarge, EPI, true>);
    }
  }
  if (cfg.unroll == kSmall) return go(gemv_w8a16_grouped_kernel<TILES, WARPS, kSmall, EPI, false>);
  if (cfg.unroll == kLarge) return go(gemv_w8a16_grouped_kernel<TILES, WARPS, kLarge, EPI, false>);
  return go(gemv_w8a16_kernel<TILES, WARPS, EPI>);
}

template <int TILES, GemvEpilogue EPI>
cudaError_t launch_warps(const GemvConfig& cfg, const GemvArgs& a, const __nv_bfloat16* x,
                         void* out, int batch, int ld_out, bool vec, cudaStream_t stream) {
  switch (cfg.warps) {
    case 4:
      return launch<TILES, 4, EPI>(cfg, a, x, out, batch, ld_out, vec, stream);
    case 16:
      return launch<TILES, 16, EPI>(cfg, a, x, out, batch, ld_out, vec, stream);
    default:
      return launch<TILES, 8, EPI>(cfg, a, x, out, batch, ld_out, vec, stream);
  }
}

template <GemvEpilogue EPI>
cudaError_t launch_tiles(const GemvConfig& cfg, const GemvArgs& a, const __nv_bfloat16* x,
                         void* out, int batch, int ld_out, bool vec, cudaStream_t stream) {
  if (cfg.tiles == 2) return launch_warps<2, EPI>(cfg, a, x, out, batch, ld_out, vec, stream);
  if constexpr (EPI != GemvEpilogue::kSiluMulBf16)
    return launch_warps<1, EPI>(cfg, a, x, out, batch, ld_out, vec, stream);
  return cudaErrorInvalidValue;  // gate/up needs two tiles (checked by the API)
}

size_t out_elem_size(GemvEpilogue e) {
  return (e == GemvEpilogue::kStoreBf16 || e == GemvEpilogue::kSiluMulBf16) ? 2 : 4;
}

}  // namespace

namespace detail {

cudaError_t gemv_w8a16_launch(const GemvArgs& a, const GemvConfig& cfg, cudaStream_t stream) {
  const bool silu = a.epilogue == GemvEpilogue::kSiluMulBf16;
  const int out_cols = silu ? a.rows / 2 : a.rows;
  const int ld_out = a.ld_out > 0 ? a.ld_out : out_cols;
  const bool vec = a.cols % 16 == 0 && reinterpret_cast<uintptr_t>(a.w) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(a.x) % 16 == 0;
  for (int b0 = 0; b0 < a.batch; b0 += 8) {
    const int nb = std::min(8, a.batch - b0);
    const __nv_bfloat16* x = a.x + static_cast<size_t>(b0) * a.cols;
    void* out =
        static_cast<char*>(a.out) + static_cast<size_t>(b0) * ld_out * out_elem_size(a.epilogue);
    cudaError_t err = cudaSuccess;
    switch (a.epilogue) {
      case GemvEpilogue::kStoreF32:
        err = launch_tiles<GemvEpilogue::kStoreF32>(cfg, a, x, out, nb, ld_out, vec, stream);
        break;
      case GemvEpilogue::kStoreBf16:
        err = launch_tiles<GemvEpilogue::kStoreBf16>(cfg, a, x, out, nb, ld_out, vec, stream);
        break;
      case GemvEpilogue::kResidualAddF32:
        err = launch_tiles<GemvEpilogue::kResidualAddF32>(cfg, a, x, out, nb, ld_out, vec, stream);
        break;
      case GemvEpilogue::kSiluMulBf16:
        err = launch_tiles<GemvEpilogue::kSiluMulBf16>(cfg, a, x, out, nb, ld_out, vec, stream);
        break;
    }
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace detail
}  // namespace ringserve::kernels
