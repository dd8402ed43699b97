// RMSNorm over the fp32 residual stream (the residual add itself is fused
// into the producing GEMV / GEMM epilogue) and the embedding gather that
// starts the stream.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#ifndef __CUDACC__
#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

// y[i, :] = bf16(x[src, :] * rsqrt(mean(x[src, :]^2) + eps) * weight), with
// src = rows_index ? rows_index[i] : i. Normalisation in fp32. When y_lo is
// given it receives bf16(v - y): y + y_lo carries the value to ~16 bits, for
// the output head where one bf16 rounding of its input shows in every logit.
#ifndef __CUDACC__
// pdl: programmatic dependent launch (sm_90; see common.cuh).
Status rmsnorm_f32_to_bf16(const float* x, const float* weight, __nv_bfloat16* y, int rows,
                           int cols, float eps, const int32_t* rows_index, cudaStream_t stream,
                           __nv_bfloat16* y_lo = nullptr, bool pdl = false);

// out[i, :] = float(table[ids[i], :]). Ids outside [0, vocab) produce zeros
// (the host validates ids; the kernel never reads out of bounds).
Status embedding_gather(const __nv_bfloat16* table, int vocab, int cols, const int32_t* ids, int n,
                        float* out, cudaStream_t stream);
#endif

namespace detail {
cudaError_t rmsnorm_launch(const float* x, const float* weight, __nv_bfloat16* y, int rows,
                           int cols, float eps, const int32_t* rows_index, cudaStream_t stream,
                           __nv_bfloat16* y_lo, bool pdl);
cudaError_t embedding_launch(const __nv_bfloat16* table, int vocab, int cols, const int32_t* ids,
                             int n, float* out, cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
