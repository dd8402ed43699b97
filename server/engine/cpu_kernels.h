// The CPU reference's numeric building blocks, fp32 activations throughout.
// Hot loops have an AVX2+FMA version chosen at run time (the binary itself
// targets baseline x86-64, so it runs anywhere) and a portable version.
// Results never depend on how many tokens are processed together: a token's
// dot products run the same instruction sequence whichever batch it is in.
#pragma once

#include <cstdint>

#include "engine/thread_pool.h"
#include "model/weights.h"

namespace ringserve::engine::cpu {

// "avx2+fma" or "generic": what the dispatcher picked on this machine.
const char* kernel_isa() noexcept;

// y[t, r] = scale[r] * sum_c q[r, c] * x[t, c] + bias[r]   for t < n.
// x is [n, w.cols], y is [n, w.rows] (row-major). Each weight row is read
// from memory once for all n tokens.
void qlinear(const model::QuantLinear& w, const float* x, int n, float* y, ThreadPool& pool);

// y[t, r] = sum_c w[r, c] * x[t, c] over a bf16 matrix (an unquantized
// lm_head or a tied embedding), same shapes and threading as qlinear.
void bf16_linear(const model::Embedding& w, const float* x, int n, float* y, ThreadPool& pool);

// sum_i a[i] * b[i]
float dot(const float* a, const float* b, int n) noexcept;

// out[i] = x[i] / rms(x) * weight[i]; the sum of squares is accumulated in
// double so long rows lose nothing.
void rms_norm(const float* x, const float* weight, int dim, float eps, float* out) noexcept;

// gate[i] = silu(gate[i]) * up[i]
void silu_mul(float* gate, const float* up, int n) noexcept;

// y[i] += a * x[i]
void axpy(float a, const float* x, float* y, int n) noexcept;

}  // namespace ringserve::engine::cpu
