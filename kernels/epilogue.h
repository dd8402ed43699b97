// Epilogues of the prefill GEMMs. The GEMMs multiply by integer-valued bf16
// weights (int8 converted exactly) into fp32 (no extra bf16 rounding), so the
// per-output-channel scale, the bias and the layer's own follow-up (residual
// add, SiLU * up) happen here in one pass over the GEMM output.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#ifndef __CUDACC__
#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

#ifndef __CUDACC__
// resid[t, n] += c[t, n] * scale[n] (+ bias[n]); c row stride ldc.
Status residual_add_scaled(const float* c, int ldc, const float* scale, const float* bias,
                           float* resid, int tokens, int n, cudaStream_t stream);

// c holds the packed gate/up projection (gemv_w8a16.h: packed_gate_row), row
// stride ldc >= 2 * inter; out[t, j] = silu(gate_j) * up_j, row stride inter.
Status silu_mul_scaled(const float* c, int ldc, const float* scale, const float* bias,
                       __nv_bfloat16* out, int tokens, int inter, cudaStream_t stream);

#endif

namespace detail {
cudaError_t residual_add_launch(const float* c, int ldc, const float* scale, const float* bias,
                                float* resid, int tokens, int n, cudaStream_t stream);
cudaError_t silu_mul_launch(const float* c, int ldc, const float* scale, const float* bias,
                            __nv_bfloat16* out, int tokens, int inter, cudaStream_t stream);
}  // namespace detail

}  // namespace ringserve::kernels
