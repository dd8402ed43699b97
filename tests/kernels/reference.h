// CPU references for the CUDA kernels, in double precision, written from the
// operator definitions (not from the kernels).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace ringserve::testing::ref {

float bf16(uint16_t bits);
uint16_t to_bf16(float f);
std::vector<uint16_t> random_bf16(size_t n, std::mt19937_64& rng, float scale = 1.0f);
std::vector<int8_t> random_int8(size_t n, std::mt19937_64& rng);
std::vector<float> random_f32(size_t n, std::mt19937_64& rng, float lo, float hi);

// ||a - b|| / ||b||; NaN anywhere gives +inf.
double rel_l2(const std::vector<double>& a, const std::vector<double>& b);

// y[b, r] = scale[r] * sum_k q[r, k] x[b, k] + bias[r]
std::vector<double> linear(const std::vector<int8_t>& q, const std::vector<float>& scale,
                           const std::vector<float>& bias, int rows, int cols,
                           const std::vector<uint16_t>& x, int batch);

std::vector<double> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, int rows,
                            int cols, double eps);

// Rotate-half RoPE of one head vector in place at position pos, with
// inv_freq rounded to bf16 (as the engines use it).
void rope(double* v, int head_dim, int pos, double theta);

// Causal / decode attention for one query head over keys [0, n).
std::vector<double> attend(const std::vector<double>& q, const std::vector<std::vector<double>>& k,
                           const std::vector<std::vector<double>>& v, int n);

}  // namespace ringserve::testing::ref
