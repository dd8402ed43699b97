// W8A16 GEMV against the double-precision reference: real 7B shapes, edge
// sizes, every epilogue and every launch configuration.
#include <gtest/gtest.h>

#include <tuple>

#include "device_buffer.h"
#include "gemv_w8a16.h"
#include "reference.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

using kernels::GemvArgs;
using kernels::GemvConfig;
using kernels::GemvEpilogue;

struct Problem {
  int rows, cols, batch;
  bool bias;
};

struct Host {
  std::vector<int8_t> q;
  std::vector<float> scale, bias;
  std::vector<uint16_t> x;
};

Host make_host(const Problem& p, std::mt19937_64& rng) {
  Host h;
  h.q = ref::random_int8(static_cast<size_t>(p.rows) * p.cols, rng);
  h.scale = ref::random_f32(p.rows, rng, 1e-3f, 2e-2f);
  if (p.bias) h.bias = ref::random_f32(p.rows, rng, -0.5f, 0.5f);
  h.x = ref::random_bf16(static_cast<size_t>(p.batch) * p.cols, rng);
  return h;
}

// Runs one GEMV; returns the output as doubles.
std::vector<double> run(const Problem& p, const Host& h, GemvEpilogue epi,
                        const GemvConfig* cfg, const std::vector<float>* resid_in) {
  DeviceBuffer<int8_t> q(h.q);
  DeviceBuffer<float> scale(h.scale);
  DeviceBuffer<float> bias(h.bias.empty() ? std::vector<float>{0.0f} : h.bias);
  DeviceBuffer<uint16_t> x(h.x);
  const bool silu = epi == GemvEpilogue::kSiluMulBf16;
  const int out_cols = silu ? p.rows / 2 : p.rows;
  const size_t n_out = static_cast<size_t>(p.batch) * out_cols;
  const bool is_bf16 = epi == GemvEpilogue::kStoreBf16 || silu;
  DeviceBuffer<float> out_f(is_bf16 ? 0 : n_out);
  DeviceBuffer<uint16_t> out_h(is_bf16 ? n_out : 0);
  if (resid_in) {
    out_f.upload(*resid_in);
  } else {
    out_f.poison();
    out_h.poison();
  }
  GemvArgs a;
  a.w = q.get();
  a.scale = scale.get();
  a.bias = h.bias.empty() ? nullptr : bias.get();
  a.rows = p.rows;
  a.cols = p.cols;
  a.x = reinterpret_cast<const __nv_bfloat16*>(x.get());
  a.batch = p.batch;
  a.out = is_bf16 ? static_cast<void*>(out_h.get()) : static_cast<void*>(out_f.get());
  a.epilogue = epi;
  auto st = cfg ? kernels::gemv_w8a16(a, *cfg, nullptr) : kernels::gemv_w8a16(a, nullptr);
  EXPECT_TRUE(st) << (st ? "" : st.error().to_string());
  std::vector<double> y(n_out);
  if (is_bf16) {
    auto v = out_h.download();
    for (size_t i = 0; i < n_out; ++i) y[i] = ref::bf16(v[i]);
  } else {
    auto v = out_f.download();
    for (size_t i = 0; i < n_out; ++i) y[i] = v[i];
  }
  return y;
}

std::vector<double> expected(const Problem& p, const Host& h, GemvEpilogue epi,
                             const std::vector<float>* resid_in) {
  auto lin = ref::linear(h.q, h.scale, h.bias, p.rows, p.cols, h.x, p.batch);
  if (epi == GemvEpilogue::kSiluMulBf16) {
    const int inter = p.rows / 2;
    std::vector<double> y(static_cast<size_t>(p.batch) * inter);
    for (int b = 0; b < p.batch; ++b)
      for (int j = 0; j < inter; ++j) {
        const int gr = kernels::packed_gate_row(j);
        const double g = lin[static_cast<size_t>(b) * p.rows + gr];
        const double u = lin[static_cast<size_t>(b) * p.rows + gr + 16];
        y[static_cast<size_t>(b) * inter + j] = g / (1.0 + std::exp(-g)) * u;
      }
    return y;
  }
  if (resid_in)
    for (size_t i = 0; i < lin.size(); ++i) lin[i] += (*resid_in)[i];
  return lin;
}

void check(const Problem& p, GemvEpilogue epi, const GemvConfig* cfg = nullptr) {
  std::mt19937_64 rng(test_seed() ^ (p.rows * 131 + p.cols * 7 + p.batch));
  const Host h = make_host(p, rng);
  std::vector<float> resid;
  if (epi == GemvEpilogue::kResidualAddF32)
    resid = ref::random_f32(static_cast<size_t>(p.batch) * p.rows, rng, -4.0f, 4.0f);
  const auto* rp = resid.empty() ? nullptr : &resid;
  const auto got = run(p, h, epi, cfg, rp);
  const auto want = expected(p, h, epi, rp);
  const bool bf16_out = epi == GemvEpilogue::kStoreBf16 || epi == GemvEpilogue::kSiluMulBf16;
  EXPECT_LT(ref::rel_l2(got, want), bf16_out ? 5e-3 : 1e-5)
      << "rows=" << p.rows << " cols=" << p.cols << " batch=" << p.batch;
}

class GemvShapes : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(GemvShapes, StoreF32MatchesReference) {
  auto [rows, cols, batch] = GetParam();
  check({rows, cols, batch, true}, GemvEpilogue::kStoreF32);
}

TEST_P(GemvShapes, ResidualAddMatchesReference) {
  auto [rows, cols, batch] = GetParam();
  check({rows, cols, batch, false}, GemvEpilogue::kResidualAddF32);
}

TEST_P(GemvShapes, StoreBf16MatchesReference) {
  auto [rows, cols, batch] = GetParam();
  check({rows, cols, batch, true}, GemvEpilogue::kStoreBf16);
}

// 7B: fused qkv 4608x3584, o 3584x3584, down 3584x18944; edge sizes: one row,
// rows not a multiple of 16, cols not a multiple of 64 or of 16 (scalar path).
INSTANTIATE_TEST_SUITE_P(
    Shapes, GemvShapes,
    ::testing::Values(std::tuple{4608, 3584, 1}, std::tuple{4608, 3584, 4},
                      std::tuple{3584, 3584, 8}, std::tuple{3584, 18944, 1},
                      std::tuple{3584, 18944, 5}, std::tuple{1, 64, 1}, std::tuple{17, 160, 3},
                      std::tuple{33, 40, 2}, std::tuple{100, 1000, 11}, std::tuple{64, 16, 8},
                      std::tuple{192, 64, 7}));

TEST(Gemv, SiluMulGateUpMatchesReference) {
  check({2 * 18944, 3584, 1, false}, GemvEpilogue::kSiluMulBf16);
  check({2 * 18944, 3584, 4, false}, GemvEpilogue::kSiluMulBf16);
  check({2 * 160, 64, 3, true}, GemvEpilogue::kSiluMulBf16);
  check({2 * 16, 40, 9, false}, GemvEpilogue::kSiluMulBf16);
}

TEST(Gemv, LmHeadShape) { check({152064, 3584, 2, false}, GemvEpilogue::kStoreF32); }

TEST(Gemv, EveryLaunchConfigurationAgrees) {
  for (int tiles : {1, 2})
    for (int warps : {4, 8, 16}) {
      GemvConfig cfg{tiles, warps};
      check({1000, 3584, 3, true}, GemvEpilogue::kStoreF32, &cfg);
      check({96, 200, 8, false}, GemvEpilogue::kResidualAddF32, &cfg);
    }
}

TEST(Gemv, RejectsBadArguments) {
  GemvArgs a;
  EXPECT_FALSE(kernels::gemv_w8a16(a, nullptr));
  DeviceBuffer<int8_t> q(64);
  DeviceBuffer<float> s(2), out(64);
  DeviceBuffer<uint16_t> x(64);
  a.w = q.get();
  a.scale = s.get();
  a.x = reinterpret_cast<const __nv_bfloat16*>(x.get());
  a.out = out.get();
  a.rows = 2;
  a.cols = 32;
  a.batch = 1;
  EXPECT_TRUE(kernels::gemv_w8a16(a, nullptr));
  a.epilogue = GemvEpilogue::kSiluMulBf16;  // 2 rows cannot hold a gate/up group
  EXPECT_FALSE(kernels::gemv_w8a16(a, nullptr));
  a.epilogue = GemvEpilogue::kStoreF32;
  EXPECT_FALSE(kernels::gemv_w8a16(a, GemvConfig{3, 8}, nullptr));
  a.ld_out = 1;
  EXPECT_FALSE(kernels::gemv_w8a16(a, nullptr));
}

}  // namespace
}  // namespace ringserve::testing
