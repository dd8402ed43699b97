#include "reference.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace ringserve::testing::ref {

float bf16(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

std::vector<uint16_t> random_bf16(size_t n, std::mt19937_64& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = to_bf16(d(rng));
  return v;
}

std::vector<int8_t> random_int8(size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(-127, 127);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(d(rng));
  return v;
}

std::vector<float> random_f32(size_t n, std::mt19937_64& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<double> linear(const std::vector<int8_t>& q, const std::vector<float>& scale,
                           const std::vector<float>& bias, int rows, int cols,
                           const std::vector<uint16_t>& x, int batch) {
  std::vector<double> xd(x.size());
  for (size_t i = 0; i < x.size(); ++i) xd[i] = bf16(x[i]);
  std::vector<double> y(static_cast<size_t>(batch) * rows);
  for (int r = 0; r < rows; ++r) {
    const int8_t* w = q.data() + static_cast<size_t>(r) * cols;
    for (int b = 0; b < batch; ++b) {
      const double* xb = xd.data() + static_cast<size_t>(b) * cols;
      double s = 0;
      for (int k = 0; k < cols; ++k) s += w[k] * xb[k];
      y[static_cast<size_t>(b) * rows + r] = s * scale[r] + (bias.empty() ? 0.0 : bias[r]);
    }
  }
  return y;
}

std::vector<double> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, int rows,
                            int cols, double eps) {
  std::vector<double> y(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < cols; ++i) ss += double(x[r * cols + i]) * x[r * cols + i];
    const double inv = 1.0 / std::sqrt(ss / cols + eps);
    for (int i = 0; i < cols; ++i) y[r * cols + i] = x[r * cols + i] * inv * w[i];
  }
  return y;
}

void rope(double* v, int head_dim, int pos, double theta) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; ++i) {
    // inv_freq rounded to bf16 like the CPU engine and the HF reference of a
    // bf16 checkpoint (server/engine/rope.h explains why).
    const double inv_freq =
        bf16(to_bf16(static_cast<float>(1.0 / std::pow(theta, 2.0 * i / head_dim))));
    const double a = pos * inv_freq, c = std::cos(a), s = std::sin(a);
    const double x1 = v[i], x2 = v[i + half];
    v[i] = x1 * c - x2 * s;
    v[i + half] = x2 * c + x1 * s;
  }
}

std::vector<double> attend(const std::vector<double>& q, const std::vector<std::vector<double>>& k,
                           const std::vector<std::vector<double>>& v, int n) {
  const size_t D = q.size();
  std::vector<double> s(n);
  double m = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < n; ++j) {
    double d = 0;
    for (size_t i = 0; i < D; ++i) d += q[i] * k[j][i];
    s[j] = d / std::sqrt(static_cast<double>(D));
    m = std::max(m, s[j]);
  }
  double l = 0;
  for (int j = 0; j < n; ++j) l += (s[j] = std::exp(s[j] - m));
  std::vector<double> o(D, 0.0);
  for (int j = 0; j < n; ++j)
    for (size_t i = 0; i < D; ++i) o[i] += s[j] / l * v[j][i];
  return o;
}

}  // namespace ringserve::testing::ref
