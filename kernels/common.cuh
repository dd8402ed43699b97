// Device helpers shared by the kernel families: bf16 packing, int8 -> bf16 and
// int8 -> fp16 conversions, tensor-core mmas, warp/block reductions.
#pragma once

#include <cuda_bf16.h>
#include <cstdint>

namespace ringserve::kernels::detail {

constexpr int kWarp = 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Block-wide reductions for blockDim.x a multiple of 32 (<= 1024). `scratch`
// holds 32 values; every thread gets the result. The reduction order is fixed,
// so results are bit-identical run to run.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int nwarps = blockDim.x / kWarp;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < nwarps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int nwarps = blockDim.x / kWarp;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < nwarps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

// Two bf16 in one register, low half = first element (the order mma expects).
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ float bf16_lo(uint32_t v) {
  return __uint_as_float(v << 16);
}
__device__ __forceinline__ float bf16_hi(uint32_t v) {
  return __uint_as_float(v & 0xffff0000u);
}

// Four int8 (one 32-bit word) to two bf16x2 registers, exactly. I2F runs at a
// quarter of the FP32 rate on sm_90; this builds 2^23 + (x + 128) as an fp32
// bit pattern with one byte permute and subtracts, which runs at full rate.
__device__ __forceinline__ void int8x4_to_bf16x2(uint32_t w, uint32_t& lo, uint32_t& hi) {
  const uint32_t u = w ^ 0x80808080u;
  constexpr float kBias = 8388736.0f;  // 2^23 + 128
  const float f0 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7440)) - kBias;
  const float f1 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7441)) - kBias;
  const float f2 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7442)) - kBias;
  const float f3 = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7443)) - kBias;
  lo = pack_bf16x2(f0, f1);
  hi = pack_bf16x2(f2, f3);
}

// Four int8 (one word) to two f16x2 registers, exactly, in half the
// instructions of the bf16 route above: 1024 + (x + 128) is an fp16 whose
// 10-bit mantissa holds x + 128 (bf16's 7 bits cannot), built for a pair
// with one byte permute, and one packed subtraction takes 1152 off both.
__device__ __forceinline__ void int8x4_to_f16x2(uint32_t w, uint32_t& lo, uint32_t& hi) {
  const uint32_t u = w ^ 0x80808080u;
  constexpr uint32_t kBias = 0x64806480u;  // {1152, 1152} in fp16
  lo = __byte_perm(u, 0x64646464u, 0x7150);
  hi = __byte_perm(u, 0x64646464u, 0x7352);
  asm("sub.rn.f16x2 %0, %0, %1;" : "+r"(lo) : "r"(kBias));
  asm("sub.rn.f16x2 %0, %0, %1;" : "+r"(hi) : "r"(kBias));
}

// A bf16 pair to an fp16 pair, each multiplied by `scale` first (a power of
// two, so exact while the result is a normal fp16).
__device__ __forceinline__ uint32_t bf16x2_to_f16x2(uint32_t v, float scale) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(bf16_hi(v) * scale), "f"(bf16_lo(v) * scale));
  return r;
}

// c += A B on the tensor cores: A 16x16 row-major, B 16x8 column-major,
// fp16 in, fp32 out (m16n8k16); fragments as in mma_bf16_16816 below.
__device__ __forceinline__ void mma_f16_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                              uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// c += A B on the tensor cores: A 16x16 row-major, B 16x8 column-major,
// bf16 in, fp32 out (m16n8k16). a0..a3: A rows g and g + 8, columns
// 2t..2t+1 then 2t+8..2t+9; b0, b1: B rows 2t..2t+1 and 2t+8..2t+9 of
// column g; c: rows g (c[0..1]) and g + 8 (c[2..3]), columns 2t, 2t + 1
// (lane = 4 g + t).
__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                               uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Streaming 16-byte load for data read exactly once (weights): bypass L1 so
// the activations that are re-read stay there.
__device__ __forceinline__ uint4 ld_stream_u4(const void* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

// The same load without `volatile`: the compiler may schedule it freely
// (the data is read-only for the kernel's lifetime), which lets it issue a
// whole unrolled group of loads before the first use.
__device__ __forceinline__ uint4 ld_nc_u4(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}

// Programmatic dependent launch (sm_90+; no-ops below). A kernel launched
// with the programmatic-serialization attribute may start while its
// predecessor in the stream still runs; pdl_wait() blocks until that
// predecessor has completed and its writes are visible, so everything that
// reads a predecessor's output (or writes what it reads) must come after it.
// pdl_wait() in a kernel launched normally returns at once.
// pdl_launch_dependents() lets the next kernel, if it was launched with the
// attribute, start now (it still waits for this one in its pdl_wait()).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Launches `kernel` normally, or (pdl) with the programmatic-serialization
// attribute so it may start before its predecessor in the stream ends. Only
// for kernels that call pdl_wait() before their first access to memory a
// predecessor writes or reads. Returns the launch error.
template <typename... Params, typename... Args>
cudaError_t launch_maybe_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                             cudaStream_t stream, bool pdl, Args... args) {
  if (!pdl) {
    kernel<<<grid, block, smem, stream>>>(args...);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
  return err != cudaSuccess ? err : cudaGetLastError();
}

// RoPE inverse frequency i of a head of head_dim d: from the engine's
// table when there is one, else computed so that it rounds to the same bf16
// (see rope_kv.cu for why bf16 and why the double pow).
__device__ __forceinline__ float rope_inv_freq(const float* table, float theta, int i, int d) {
  if (table) return table[i];
  const float exact = static_cast<float>(1.0 / pow(static_cast<double>(theta), (2.0 * i) / d));
  return __bfloat162float(__float2bfloat16_rn(exact));
}

// cos and sin of pos * inv_freq[i] for i < head_dim / 2, spread over the
// block's threads, into shared-memory tables (the caller synchronises).
__device__ __forceinline__ void rope_table(float pos, const float* inv_freq, float theta,
                                           int head_dim, float* cos_t, float* sin_t) {
  for (int i = threadIdx.x; i < head_dim / 2; i += blockDim.x) {
    float s, c;
    sincosf(pos * rope_inv_freq(inv_freq, theta, i, head_dim), &s, &c);
    cos_t[i] = c;
    sin_t[i] = s;
  }
}

// Rotate-half RoPE of the pair (x1, x2) = (v[i], v[i + d/2]). Unfused
// multiplies and adds, so every kernel that rotates (rope_kv_write, the
// fused attention) gets the same bits whatever the compiler contracts.
__device__ __forceinline__ float2 rope_rotate(float x1, float x2, float c, float s) {
  return make_float2(__fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s)),
                     __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s)));
}

__device__ __forceinline__ float silu(float x) {
  return x / (1.0f + expf(-x));
}

}  // namespace ringserve::kernels::detail
