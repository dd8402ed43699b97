#include "engine/cpu_kernels.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RS_HAVE_AVX2_PATH 1
#include <immintrin.h>
#endif

namespace ringserve::engine::cpu {
namespace {

// Dot products of one int8 weight row with up to kMaxTokens activation
// rows, 16 columns per iteration into two 8-lane accumulators per token.
// The portable and the AVX2 versions share this shape; a token's result does
// not depend on T (the other tokens only share the weight loads).
constexpr int kMaxTokens = 4;

inline float widen(int8_t v) {
  return static_cast<float>(v);
}
inline float widen(uint16_t v) {
  return model::bf16_to_float(v);
}

template <typename W, int T>
void wdot_generic(const W* w, const float* x, int cols, int x_stride, float* out) {
  for (int t = 0; t < T; ++t) {
    float acc[16] = {};
    const float* xt = x + static_cast<size_t>(t) * x_stride;
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
      for (int j = 0; j < 16; ++j) acc[j] += widen(w[c + j]) * xt[c + j];
    }
    float s = 0.0f;
    for (int j = 0; j < 8; ++j) s += acc[j] + acc[j + 8];
    for (; c < cols; ++c) s += widen(w[c]) * xt[c];
    out[t] = s;
  }
}

float dot_generic(const float* a, const float* b, int n) noexcept {
  float acc[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float s = 0.0f;
  for (int j = 0; j < 8; ++j) s += acc[j] + acc[j + 8];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

#ifdef RS_HAVE_AVX2_PATH
__attribute__((target("avx2,fma"))) inline float hsum256(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) inline __m256 load_w8(const int8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

__attribute__((target("avx2,fma"))) inline __m256 load_w8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

template <typename W, int T>
__attribute__((target("avx2,fma"))) void wdot_avx2(const W* w, const float* x, int cols,
                                                   int x_stride, float* out) {
  __m256 acc0[T], acc1[T];
  for (int t = 0; t < T; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
  int c = 0;
  for (; c + 16 <= cols; c += 16) {
    const __m256 w0 = load_w8(w + c);
    const __m256 w1 = load_w8(w + c + 8);
    for (int t = 0; t < T; ++t) {
      const float* xt = x + static_cast<size_t>(t) * x_stride + c;
      acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xt), acc0[t]);
      acc1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xt + 8), acc1[t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    float s = hsum256(_mm256_add_ps(acc0[t], acc1[t]));
    const float* xt = x + static_cast<size_t>(t) * x_stride;
    for (int k = c; k < cols; ++k) s += widen(w[k]) * xt[k];
    out[t] = s;
  }
}

__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int n) noexcept {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  float s = hsum256(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
#endif

using QdotFn = void (*)(const int8_t*, const float*, int, int, float*);
using BdotFn = void (*)(const uint16_t*, const float*, int, int, float*);
using DotFn = float (*)(const float*, const float*, int) noexcept;

struct Kernels {
  const char* isa;
  QdotFn qdot[kMaxTokens + 1];
  BdotFn bdot[kMaxTokens + 1];
  DotFn dot;
};

Kernels pick_kernels() {
#ifdef RS_HAVE_AVX2_PATH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2+fma",
            {nullptr, wdot_avx2<int8_t, 1>, wdot_avx2<int8_t, 2>, wdot_avx2<int8_t, 3>,
             wdot_avx2<int8_t, 4>},
            {nullptr, wdot_avx2<uint16_t, 1>, wdot_avx2<uint16_t, 2>, wdot_avx2<uint16_t, 3>,
             wdot_avx2<uint16_t, 4>},
            dot_avx2};
  }
#endif
  return {"generic",
          {nullptr, wdot_generic<int8_t, 1>, wdot_generic<int8_t, 2>, wdot_generic<int8_t, 3>,
           wdot_generic<int8_t, 4>},
          {nullptr, wdot_generic<uint16_t, 1>, wdot_generic<uint16_t, 2>, wdot_generic<uint16_t, 3>,
           wdot_generic<uint16_t, 4>},
          dot_generic};
}

const Kernels& kernels() {
  static const Kernels k = pick_kernels();
  return k;
}

}  // namespace

const char* kernel_isa() noexcept {
  return kernels().isa;
}

float dot(const float* a, const float* b, int n) noexcept {
  return kernels().dot(a, b, n);
}

void qlinear(const model::QuantLinear& w, const float* x, int n, float* y, ThreadPool& pool) {
  const Kernels& k = kernels();
  const int rows = w.rows, cols = w.cols;
  const bool has_bias = !w.bias.empty();
  // Enough work per chunk that waking a worker pays off on tiny models.
  const int64_t grain = std::max<int64_t>(1, 65536 / (static_cast<int64_t>(cols) * n));
  pool.parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    float out[kMaxTokens];
    for (int64_t r = begin; r < end; ++r) {
      const int8_t* wr = w.q.data() + r * cols;
      const float scale = w.scale[r];
      const float bias = has_bias ? w.bias[r] : 0.0f;
      for (int t = 0; t < n; t += kMaxTokens) {
        const int tn = std::min(kMaxTokens, n - t);
        k.qdot[tn](wr, x + static_cast<size_t>(t) * cols, cols, cols, out);
        for (int i = 0; i < tn; ++i) {
          y[static_cast<size_t>(t + i) * rows + r] = out[i] * scale + bias;
        }
      }
    }
  });
}

void bf16_linear(const model::Embedding& w, const float* x, int n, float* y, ThreadPool& pool) {
  const Kernels& k = kernels();
  const int rows = w.rows, cols = w.cols;
  const int64_t grain = std::max<int64_t>(1, 65536 / (static_cast<int64_t>(cols) * n));
  pool.parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    float out[kMaxTokens];
    for (int64_t r = begin; r < end; ++r) {
      const uint16_t* wr = w.bf16.data() + r * cols;
      for (int t = 0; t < n; t += kMaxTokens) {
        const int tn = std::min(kMaxTokens, n - t);
        k.bdot[tn](wr, x + static_cast<size_t>(t) * cols, cols, cols, out);
        for (int i = 0; i < tn; ++i) y[static_cast<size_t>(t + i) * rows + r] = out[i];
      }
    }
  });
}

void rms_norm(const float* x, const float* weight, int dim, float eps, float* out) noexcept {
  double sum = 0.0;
  for (int i = 0; i < dim; ++i) sum += static_cast<double>(x[i]) * x[i];
  const auto inv = static_cast<float>(1.0 / std::sqrt(sum / dim + eps));
  for (int i = 0; i < dim; ++i) out[i] = x[i] * inv * weight[i];
}

void silu_mul(float* gate, const float* up, int n) noexcept {
  for (int i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void axpy(float a, const float* x, float* y, int n) noexcept {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace ringserve::engine::cpu
