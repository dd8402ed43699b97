// The CPU engine's numeric kernels against plain double-precision loops.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <random>
#include <vector>

#include "engine/cpu_kernels.h"
#include "engine/rope.h"
#include "engine/thread_pool.h"
#include "support/test_support.h"

namespace ringserve::engine::cpu {
namespace {

model::QuantLinear random_linear(std::mt19937_64& rng, int rows, int cols, bool bias) {
  model::QuantLinear w;
  w.rows = rows;
  w.cols = cols;
  std::uniform_int_distribution<int> q(-127, 127);
  std::uniform_real_distribution<float> s(0.001f, 0.02f);
  w.q.resize(static_cast<size_t>(rows) * cols);
  for (auto& v : w.q) v = static_cast<int8_t>(q(rng));
  w.scale.resize(rows);
  for (auto& v : w.scale) v = s(rng);
  if (bias) {
    w.bias.resize(rows);
    for (auto& v : w.bias) v = s(rng) - 0.01f;
  }
  return w;
}

std::vector<float> random_vector(std::mt19937_64& rng, size_t n) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(CpuKernels, QlinearMatchesDoubleReference) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  ThreadPool pool(3);
  std::printf("kernels: %s\n", kernel_isa());
  // Column counts on and off the 16-wide blocking; token counts around the
  // 4-token grouping.
  for (int cols : {1, 15, 16, 33, 64, 160, 3584}) {
    for (int n : {1, 3, 4, 5, 9}) {
      const int rows = 37;
      const auto w = random_linear(rng, rows, cols, n % 2 == 1);
      const auto x = random_vector(rng, static_cast<size_t>(n) * cols);
      std::vector<float> y(static_cast<size_t>(n) * rows);
      qlinear(w, x.data(), n, y.data(), pool);
      for (int t = 0; t < n; ++t) {
        for (int r = 0; r < rows; ++r) {
          double ref = 0.0, mag = 0.0;
          for (int c = 0; c < cols; ++c) {
            const double p = double(w.q[size_t(r) * cols + c]) * x[size_t(t) * cols + c];
            ref += p;
            mag += std::abs(p);
          }
          ref = ref * w.scale[r] + (w.bias.empty() ? 0.0 : w.bias[r]);
          // fp32 accumulation: relative to the sum of magnitudes.
          const double tol = 1e-6 * mag * w.scale[r] * std::sqrt(double(cols)) + 1e-6;
          ASSERT_NEAR(y[size_t(t) * rows + r], ref, tol) << "cols " << cols << " n " << n;
        }
      }
    }
  }
}

TEST(CpuKernels, QlinearResultDoesNotDependOnBatchPosition) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  ThreadPool pool(2);
  const int rows = 50, cols = 200, n = 7;
  const auto w = random_linear(rng, rows, cols, true);
  const auto x = random_vector(rng, size_t(n) * cols);
  std::vector<float> batched(size_t(n) * rows), single(rows);
  qlinear(w, x.data(), n, batched.data(), pool);
  for (int t = 0; t < n; ++t) {
    qlinear(w, x.data() + size_t(t) * cols, 1, single.data(), pool);
    for (int r = 0; r < rows; ++r) ASSERT_EQ(batched[size_t(t) * rows + r], single[r]);
  }
}

TEST(CpuKernels, Bf16LinearMatchesDoubleReference) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  ThreadPool pool(2);
  for (int cols : {8, 64, 100}) {
    model::Embedding w;
    w.rows = 21;
    w.cols = cols;
    for (float v : random_vector(rng, size_t(w.rows) * cols)) {
      w.bf16.push_back(model::float_to_bf16(v));
    }
    const int n = 6;
    const auto x = random_vector(rng, size_t(n) * cols);
    std::vector<float> y(size_t(n) * w.rows);
    bf16_linear(w, x.data(), n, y.data(), pool);
    for (int t = 0; t < n; ++t) {
      for (int r = 0; r < w.rows; ++r) {
        double ref = 0.0;
        for (int c = 0; c < cols; ++c) {
          ref +=
              double(model::bf16_to_float(w.bf16[size_t(r) * cols + c])) * x[size_t(t) * cols + c];
        }
        ASSERT_NEAR(y[size_t(t) * w.rows + r], ref, 1e-4 * std::sqrt(double(cols)));
      }
    }
  }
}

TEST(CpuKernels, RmsNormSiluAndDot) {
  const std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f};
  const std::vector<float> weight = {1.0f, 2.0f, 0.5f, -1.0f};
  std::vector<float> out(4);
  rms_norm(x.data(), weight.data(), 4, 1e-6f, out.data());
  const double rms = std::sqrt((1 + 4 + 9 + 0.25) / 4.0 + 1e-6);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[i], x[i] / rms * weight[i], 1e-6);

  std::vector<float> gate = {0.0f, 1.0f, -3.0f}, up = {2.0f, 3.0f, 1.0f};
  silu_mul(gate.data(), up.data(), 3);
  EXPECT_NEAR(gate[0], 0.0, 1e-7);
  EXPECT_NEAR(gate[1], 3.0 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(gate[2], -3.0 / (1 + std::exp(3.0)), 1e-6);

  std::vector<float> a(37), b(37);
  double ref = 0.0;
  for (int i = 0; i < 37; ++i) {
    a[i] = 0.1f * i;
    b[i] = 1.0f - 0.05f * i;
    ref += double(a[i]) * b[i];
  }
  EXPECT_NEAR(dot(a.data(), b.data(), 37), ref, 1e-4);
}

TEST(CpuKernels, RopeRotatesHalvesWithBf16Frequencies) {
  const int head_dim = 8, heads = 2;
  RopeTable rope(head_dim, 10000.0, 64);
  std::vector<float> x(heads * head_dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(i) - 1.0f;
  const auto orig = x;
  rope.apply(x.data(), heads, 0);
  EXPECT_EQ(x, orig);  // position 0 is the identity
  const int pos = 37;
  rope.apply(x.data(), heads, pos);
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < head_dim / 2; ++i) {
      const float exact = float(1.0 / std::pow(10000.0, 2.0 * i / head_dim));
      const double f = model::bf16_to_float(model::float_to_bf16(exact));
      const double angle = double(float(pos) * float(f));
      const double a = orig[h * head_dim + i], b = orig[h * head_dim + i + head_dim / 2];
      EXPECT_NEAR(x[h * head_dim + i], a * std::cos(angle) - b * std::sin(angle), 1e-5);
      EXPECT_NEAR(x[h * head_dim + i + head_dim / 2], b * std::cos(angle) + a * std::sin(angle),
                  1e-5);
    }
  }
}

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      for (int rep = 0; rep < 20; ++rep) {
        pool.parallel_for(n, 3, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i]++;
        });
      }
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 20) << threads << " " << n;
    }
  }
}

}  // namespace
}  // namespace ringserve::engine::cpu
