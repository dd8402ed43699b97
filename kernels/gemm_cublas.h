// Prefill GEMMs through cuBLAS, in the row-major terms the rest of the code
// uses: C[M][N] = A[M][K] * B[N][K]^T (a linear layer: activations x weights^T).
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#ifndef __CUDACC__
#include "ringserve/common/expected.h"
#endif

namespace ringserve::kernels {

#ifndef __CUDACC__
// bf16 inputs, fp32 accumulation, C in `c_type` (CUDA_R_16BF or CUDA_R_32F).
Status gemm_bf16_nt(cublasHandle_t handle, int M, int N, int K, const __nv_bfloat16* A, int lda,
                    const __nv_bfloat16* B, int ldb, void* C, cudaDataType_t c_type, int ldc,
                    cudaStream_t stream);
#endif

}  // namespace ringserve::kernels
