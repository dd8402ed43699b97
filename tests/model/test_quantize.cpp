#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "model/layout.h"
#include "model/quantize.h"
#include "model/tensor_source.h"
#include "support/test_support.h"

namespace ringserve::model {
namespace {

std::vector<float> dequantize_row(const QuantLinear& q, int r) {
  std::vector<float> out(static_cast<size_t>(q.cols));
  for (int c = 0; c < q.cols; ++c) out[c] = q.scale[r] * q.q[static_cast<size_t>(r) * q.cols + c];
  return out;
}

TEST(Quantize, RoundsHalfToEven) {
  // max 127 -> scale exactly 1, so w / scale is w itself.
  std::vector<float> w{127.0f, 2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f, 1.5f, -127.0f};
  std::vector<int8_t> q(w.size());
  float scale = -1;
  ASSERT_TRUE(quantize_row(w, q, scale));
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(q, (std::vector<int8_t>{127, 2, 4, -2, -4, 0, 0, 2, -127}));
}

TEST(Quantize, AllZeroRowHasScaleZero) {
  std::vector<float> w(17, 0.0f);
  w[3] = -0.0f;
  std::vector<int8_t> q(w.size(), 5);
  float scale = -1;
  ASSERT_TRUE(quantize_row(w, q, scale));
  EXPECT_EQ(scale, 0.0f);
  for (int8_t v : q) EXPECT_EQ(v, 0);
}

TEST(Quantize, RefusesNonFiniteAndNamesTheRow) {
  for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    std::vector<float> m(4 * 8, 0.25f);
    m[2 * 8 + 5] = bad;
    std::vector<int8_t> q(m.size());
    std::vector<float> s(4);
    auto st =
        quantize_matrix(DType::kF32, reinterpret_cast<const std::byte*>(m.data()), 4, 8, q, s, 2);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, Errc::kCorruptData);
    EXPECT_NE(st.error().message.find("row 2"), std::string::npos) << st.error().message;
  }
}

TEST(Quantize, RefusesIntegerSource) {
  std::vector<int8_t> m(8), q(8);
  std::vector<float> s(1);
  EXPECT_FALSE(
      quantize_matrix(DType::kI8, reinterpret_cast<const std::byte*>(m.data()), 1, 8, q, s, 1));
}

// |w - q * s| <= s / 2 for every element, in every source precision.
TEST(Quantize, ErrorBoundHoldsForRandomRows) {
  const uint64_t seed = testing::test_seed();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const int rows = 97, cols = 301;
  std::vector<float> f32(static_cast<size_t>(rows) * cols);
  for (auto& v : f32) v = normal(rng);
  for (int r = 0; r < 5; ++r)
    f32[static_cast<size_t>(r) * cols + (r * 7) % cols] = 3.0f * (r + 1);  // outliers
  std::vector<uint16_t> bf16(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) bf16[i] = float_to_bf16(f32[i]);

  for (DType type : {DType::kF32, DType::kBF16}) {
    const std::byte* src = type == DType::kF32 ? reinterpret_cast<const std::byte*>(f32.data())
                                               : reinterpret_cast<const std::byte*>(bf16.data());
    QuantLinear q;
    q.rows = rows;
    q.cols = cols;
    q.q.resize(f32.size());
    q.scale.resize(rows);
    ASSERT_TRUE(quantize_matrix(type, src, rows, cols, q.q, q.scale, 3));
    for (int r = 0; r < rows; ++r) {
      auto deq = dequantize_row(q, r);
      float max_abs = 0;
      for (int c = 0; c < cols; ++c)
        max_abs = std::max(max_abs, std::fabs(load_float(type, src, r * cols + c)));
      EXPECT_FLOAT_EQ(q.scale[r], max_abs / 127.0f);
      for (int c = 0; c < cols; ++c) {
        float w = load_float(type, src, static_cast<size_t>(r) * cols + c);
        // Exact arithmetic gives <= s/2; the float product q * s and the
        // subtraction each add up to half an ulp of |w| <= max_abs.
        const float slack = 2 * std::numeric_limits<float>::epsilon() * max_abs;
        ASSERT_LE(std::fabs(w - deq[c]), q.scale[r] / 2 + slack) << "seed " << seed << " row " << r;
        ASSERT_GE(q.q[static_cast<size_t>(r) * cols + c], -127);
      }
    }
  }
}

TEST(Quantize, F16SourceMatchesItsFloatValues) {
  // 1.0, -2.0, 0.5, 65504 (max half), a subnormal, -0
  std::vector<uint16_t> h{0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x8000};
  EXPECT_EQ(f16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_float(0xc000), -2.0f);
  EXPECT_EQ(f16_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(f16_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_float(0x7e00)));
  std::vector<int8_t> q(h.size());
  std::vector<float> s(1);
  ASSERT_TRUE(
      quantize_matrix(DType::kF16, reinterpret_cast<const std::byte*>(h.data()), 1, 6, q, s, 1));
  EXPECT_EQ(s[0], 65504.0f / 127.0f);
  EXPECT_EQ(q[3], 127);
}

TEST(Quantize, ThreadCountDoesNotChangeTheResult) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> m(1000 * 64);
  for (auto& v : m) v = u(rng);
  std::vector<int8_t> q1(m.size()), q8(m.size());
  std::vector<float> s1(1000), s8(1000);
  auto src = reinterpret_cast<const std::byte*>(m.data());
  ASSERT_TRUE(quantize_matrix(DType::kF32, src, 1000, 64, q1, s1, 1));
  ASSERT_TRUE(quantize_matrix(DType::kF32, src, 1000, 64, q8, s8, 8));
  EXPECT_EQ(q1, q8);
  EXPECT_EQ(s1, s8);
}

// The int8exact fixture's decoder-layer linear weights are exact multiples
// of max|row| / 127: quantizing must lose nothing. (Its lm_head is not
// int8-exact: no row of it is, so it is left out here.)
TEST(Quantize, LosslessOnInt8ExactFixture) {
  auto source = TensorSource::open_dir(testing::fixture_path("models/tiny-qwen2-int8exact"));
  ASSERT_TRUE(source) << source.error().to_string();
  int checked = 0;
  for (const auto& v : source->tensors()) {
    std::string name(v.name);
    if (v.shape.size() != 2 || name == kEmbedName || name == kLmHeadName) continue;
    auto q = quantize_linear(v, 2);
    ASSERT_TRUE(q) << q.error().to_string();
    for (int r = 0; r < q->rows; ++r) {
      auto deq = dequantize_row(*q, r);
      for (int c = 0; c < q->cols; ++c) {
        float w = load_float(v.dtype, v.bytes.data(), static_cast<size_t>(r) * q->cols + c);
        ASSERT_EQ(w, deq[c]) << name << " row " << r << " col " << c;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2 * 7);  // 7 linears per layer
}

}  // namespace
}  // namespace ringserve::model
