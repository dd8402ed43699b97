// W8A16 GEMV against the double-precision reference: real 7B shapes, edge
// sizes, every epilogue and every launch configuration.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <tuple>

#include "device_buffer.h"
#include "gemv_w8a16.h"
#include "norm.h"
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

// The weights as the kernel reads them in `layout`.
std::vector<int8_t> laid_out(const Problem& p, const Host& h, kernels::WeightLayout layout) {
  std::vector<int8_t> q = h.q;
  if (layout == kernels::WeightLayout::kTiled16x64)
    kernels::retile_rows_host(q.data(), p.rows, p.cols, true);
  return q;
}

// Runs one GEMV; returns the output as doubles.
std::vector<double> run(const Problem& p, const Host& h, GemvEpilogue epi, const GemvConfig* cfg,
                        const std::vector<float>* resid_in,
                        kernels::WeightLayout layout = kernels::WeightLayout::kRowMajor) {
  DeviceBuffer<int8_t> q(laid_out(p, h, layout));
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
  a.layout = layout;
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

// Checks the default launch (configs empty) or each of `configs` against the
// reference, with the weights row-major and, where the shape allows, also in
// 16x64 tiles; host data and the reference are computed once per problem,
// the output is poisoned (or, for the residual epilogue, re-uploaded) before
// every run.
void check(const Problem& p, GemvEpilogue epi, const std::vector<GemvConfig>& configs = {}) {
  std::mt19937_64 rng(test_seed() ^ (p.rows * 131 + p.cols * 7 + p.batch));
  const Host h = make_host(p, rng);
  std::vector<float> resid;
  if (epi == GemvEpilogue::kResidualAddF32)
    resid = ref::random_f32(static_cast<size_t>(p.batch) * p.rows, rng, -4.0f, 4.0f);
  const auto* rp = resid.empty() ? nullptr : &resid;
  const auto want = expected(p, h, epi, rp);
  const bool bf16_out = epi == GemvEpilogue::kStoreBf16 || epi == GemvEpilogue::kSiluMulBf16;
  std::vector<kernels::WeightLayout> layouts = {kernels::WeightLayout::kRowMajor};
  if (kernels::tiled_layout_fits(p.rows, p.cols))
    layouts.push_back(kernels::WeightLayout::kTiled16x64);
  auto one = [&](const GemvConfig* cfg) {
    for (auto layout : layouts) {
      if (cfg && !kernels::gemv_config_fits(*cfg, p.rows, layout)) continue;
      const auto got = run(p, h, epi, cfg, rp, layout);
      EXPECT_LT(ref::rel_l2(got, want), bf16_out ? 5e-3 : 1e-5)
          << "rows=" << p.rows << " cols=" << p.cols << " batch=" << p.batch << " config "
          << (cfg ? kernels::describe(*cfg) : "default")
          << (layout == kernels::WeightLayout::kRowMajor ? " row-major" : " tiled");
    }
  };
  if (configs.empty()) {
    one(nullptr);
  } else {
    for (const auto& c : configs) one(&c);
  }
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
INSTANTIATE_TEST_SUITE_P(Shapes, GemvShapes,
                         ::testing::Values(std::tuple{4608, 3584, 1}, std::tuple{4608, 3584, 4},
                                           std::tuple{3584, 3584, 8}, std::tuple{3584, 18944, 1},
                                           std::tuple{3584, 18944, 5}, std::tuple{1, 64, 1},
                                           std::tuple{17, 160, 3}, std::tuple{33, 40, 2},
                                           std::tuple{100, 1000, 11}, std::tuple{64, 16, 8},
                                           std::tuple{192, 64, 7}));

TEST(Gemv, SiluMulGateUpMatchesReference) {
  check({2 * 18944, 3584, 1, false}, GemvEpilogue::kSiluMulBf16);
  check({2 * 18944, 3584, 4, false}, GemvEpilogue::kSiluMulBf16);
  check({2 * 160, 64, 3, true}, GemvEpilogue::kSiluMulBf16);
  check({2 * 16, 40, 9, false}, GemvEpilogue::kSiluMulBf16);
}

TEST(Gemv, LmHeadShape) {
  check({152064, 3584, 2, false}, GemvEpilogue::kStoreF32);
}

TEST(Gemv, EveryLaunchConfigurationAgrees) {
  for (auto epi : {GemvEpilogue::kStoreF32, GemvEpilogue::kResidualAddF32}) {
    const auto cfgs = kernels::gemv_configs(epi, true);
    check({1000, 3584, 3, true}, epi, cfgs);
    check({96, 200, 8, false}, epi, cfgs);
  }
  check({1000, 3584, 3, true}, GemvEpilogue::kStoreBf16,
        kernels::gemv_configs(GemvEpilogue::kStoreBf16, true));
}

// Every variant (the tuner may pick any of them) at the 7B decode shapes with
// the epilogues the forward pass uses, at batch 1 and at batches that fill a
// pass partly, fully and over it.
TEST(Gemv, EveryVariantAtSevenBShapes) {
  const auto f32 = kernels::gemv_configs(GemvEpilogue::kStoreF32, true);
  const auto res = kernels::gemv_configs(GemvEpilogue::kResidualAddF32, true);
  const auto silu = kernels::gemv_configs(GemvEpilogue::kSiluMulBf16, true);
  check({4608, 3584, 1, true}, GemvEpilogue::kStoreF32, f32);  // fused qkv (biased)
  check({4608, 3584, 5, true}, GemvEpilogue::kStoreF32, f32);
  check({3584, 3584, 1, false}, GemvEpilogue::kResidualAddF32, res);  // o_proj
  check({3584, 3584, 8, false}, GemvEpilogue::kResidualAddF32, res);
  check({3584, 18944, 1, false}, GemvEpilogue::kResidualAddF32, res);  // down_proj
  check({3584, 18944, 4, false}, GemvEpilogue::kResidualAddF32, res);
  check({2 * 18944, 3584, 1, false}, GemvEpilogue::kSiluMulBf16, silu);  // gate/up
  check({2 * 18944, 3584, 3, false}, GemvEpilogue::kSiluMulBf16, silu);
}

// Every variant at edge sizes: one row, rows not a multiple of 16 or 32,
// cols not a multiple of 64 (partial chunk on the vector path) or of 16
// (scalar path only), fewer chunks than warps, batch over 8 (two passes).
TEST(Gemv, EveryVariantAtEdgeSizes) {
  for (auto epi : {GemvEpilogue::kStoreF32, GemvEpilogue::kResidualAddF32}) {
    const auto cfgs = kernels::gemv_configs(epi, true);
    for (const Problem& p :
         {Problem{1, 64, 1, true}, Problem{17, 160, 3, true}, Problem{33, 40, 2, false},
          Problem{100, 1000, 11, true}, Problem{64, 16, 8, false}, Problem{96, 208, 8, true},
          Problem{64, 128, 4, false}, Problem{50, 4160, 9, true}})
      check(p, epi, cfgs);
  }
  const auto silu = kernels::gemv_configs(GemvEpilogue::kSiluMulBf16, true);
  check({2 * 160, 64, 3, true}, GemvEpilogue::kSiluMulBf16, silu);
  check({2 * 16, 40, 9, false}, GemvEpilogue::kSiluMulBf16, silu);
  check({2 * 48, 208, 8, true}, GemvEpilogue::kSiluMulBf16, silu);
}

// The kernels multiply in fp16 with the activations scaled by 2^-4 (see
// gemv_w8a16.cu): activations below 2^20 must stay finite, those of at least
// 2^-12 must be exact, and each smaller one may be off by at most 2^-21. So
// every output may differ from the exact result by that bound summed over
// its row, plus fp32 summation error (4e-6 of the row's sum of |w x|), and
// by no more. Checked for every launch shape with activations of every
// magnitude (2^-30 to 2^19, random signs) and with small ones (|x| <= 1e-3,
// the scale of a norm with small weights).
TEST(Gemv, ActivationsOfEveryMagnitude) {
  const Problem p{96, 3584, 3, true};
  std::mt19937_64 rng(test_seed() ^ 0x5ca1e);
  Host h = make_host(p, rng);
  std::uniform_real_distribution<float> exponent(-30.0f, 19.0f), small(-1e-3f, 1e-3f);
  std::bernoulli_distribution negative(0.5);
  const std::function<float()> draws[] = {
      [&] { return (negative(rng) ? -1.0f : 1.0f) * std::exp2(exponent(rng)); },
      [&] { return small(rng); }};
  for (const auto& draw : draws) {
    for (auto& v : h.x) v = ref::to_bf16(draw());
    const auto want = expected(p, h, GemvEpilogue::kStoreF32, nullptr);
    std::vector<double> bound(want.size());
    for (int b = 0; b < p.batch; ++b)
      for (int r = 0; r < p.rows; ++r) {
        double tiny = 0.0, mag = 0.0;
        for (int k = 0; k < p.cols; ++k) {
          const double w = std::abs(h.q[static_cast<size_t>(r) * p.cols + k]);
          const double x = std::abs(ref::bf16(h.x[static_cast<size_t>(b) * p.cols + k]));
          if (x < std::exp2(-12.0)) tiny += w;
          mag += w * x;
        }
        bound[static_cast<size_t>(b) * p.rows + r] =
            h.scale[r] * (tiny * std::exp2(-21.0) + 4e-6 * mag) + 1e-6;
      }
    for (const auto& cfg : kernels::gemv_configs(GemvEpilogue::kStoreF32, true)) {
      const auto got = run(p, h, GemvEpilogue::kStoreF32, &cfg, nullptr);
      int bad = 0;
      size_t first = 0;
      for (size_t i = 0; i < got.size(); ++i)
        if (!std::isfinite(got[i]) || std::abs(got[i] - want[i]) > bound[i]) {
          if (bad == 0) first = i;
          ++bad;
        }
      EXPECT_EQ(bad, 0) << kernels::describe(cfg) << ": output " << first << " is " << got[first]
                        << ", expected " << want[first] << " +- " << bound[first];
    }
  }
}

// The start-up tuner may run one launch shape at batch 1 and another at
// wider batches, choosing only among shapes that add up in the same order
// (kernels::same_summation_order), so that a sequence's logits do not depend
// on what it is batched with. Holds every such pair to that: batch row r of
// a wide launch of one equals, bit for bit, a batch-1 launch of the other
// on row r alone.
TEST(Gemv, ShapesOfOneSummationOrderAreBatchInvariant) {
  struct Case {
    Problem p;
    GemvEpilogue epi;
  };
  const Case cases[] = {{{1024, 3584, 4, true}, GemvEpilogue::kStoreF32},
                        {{256, 18944, 8, false}, GemvEpilogue::kStoreF32},
                        {{1000, 200, 3, false}, GemvEpilogue::kStoreF32},  // partial chunk
                        {{2 * 1024, 3584, 4, false}, GemvEpilogue::kSiluMulBf16}};
  for (const auto& [p, epi] : cases) {
    std::mt19937_64 rng(test_seed() ^ (p.rows * 31 + p.cols));
    const Host wide = make_host(p, rng);
    const int out_cols = epi == GemvEpilogue::kSiluMulBf16 ? p.rows / 2 : p.rows;
    const auto cfgs = kernels::gemv_configs(epi, true);
    const int rows_checked[] = {0, p.batch - 1};
    // singles[k][j]: row rows_checked[k] alone under cfgs[j].
    std::vector<std::vector<double>> singles[2];
    for (int k = 0; k < 2; ++k) {
      const int r = rows_checked[k];
      Host one = wide;
      one.x.assign(wide.x.begin() + static_cast<size_t>(r) * p.cols,
                   wide.x.begin() + static_cast<size_t>(r + 1) * p.cols);
      const Problem p1{p.rows, p.cols, 1, p.bias};
      for (const auto& c : cfgs) singles[k].push_back(run(p1, one, epi, &c, nullptr));
    }
    size_t pairs = 0;
    for (const auto& a : cfgs) {
      const auto y = run(p, wide, epi, &a, nullptr);
      for (int k = 0; k < 2; ++k) {
        const int r = rows_checked[k];
        for (size_t j = 0; j < cfgs.size(); ++j) {
          if (!kernels::same_summation_order(a, cfgs[j])) continue;
          ++pairs;
          int diff = 0;
          for (int i = 0; i < out_cols; ++i)
            diff += y[static_cast<size_t>(r) * out_cols + i] != singles[k][j][i];
          EXPECT_EQ(diff, 0) << p.rows << "x" << p.cols << " row " << r << " of batch " << p.batch
                             << " under " << kernels::describe(a) << " against "
                             << kernels::describe(cfgs[j]) << " at batch 1";
        }
      }
    }
    // Not only each shape against itself: shapes of other tiles and unrolls
    // share an order, and those pairs are what the tuner relies on.
    EXPECT_GT(pairs, 2 * cfgs.size()) << p.rows << "x" << p.cols;
  }
}

TEST(Gemv, LmHeadShapeGroupedVariant) {
  check({152064, 3584, 2, false}, GemvEpilogue::kStoreF32, {GemvConfig{1, 4, 8}});
}

// Programmatic dependent launch: the GEMV may start while the kernel that
// writes its input still runs and must wait for it before reading. The
// producer is the RMSNorm the decode step runs before a GEMV (it lets its
// dependants launch at once), here over many rows so it is still running
// when the GEMV starts; the GEMV's x is its last rows, poisoned (NaN)
// beforehand. The reference is computed from x as the producer left it.
void check_waits_for_the_producer_of_x(const std::vector<GemvConfig>& configs,
                                       kernels::WeightLayout layout, uint64_t seed) {
  const Problem p{4608, 3584, 4, true};
  const int norm_rows = 8192;
  std::mt19937_64 rng(test_seed() ^ seed);
  Host h = make_host(p, rng);
  const auto xin = ref::random_f32(static_cast<size_t>(norm_rows) * p.cols, rng, -2.0f, 2.0f);
  DeviceBuffer<float> dxin(xin), ones(std::vector<float>(p.cols, 1.0f));
  DeviceBuffer<uint16_t> xn(static_cast<size_t>(norm_rows) * p.cols);
  DeviceBuffer<int8_t> q(laid_out(p, h, layout));
  DeviceBuffer<float> scale(h.scale), bias(h.bias);
  const size_t x_off = static_cast<size_t>(norm_rows - p.batch) * p.cols;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (const GemvConfig& cfg : configs) {
    xn.poison();
    DeviceBuffer<float> out(static_cast<size_t>(p.batch) * p.rows);
    out.poison();
    ASSERT_TRUE(kernels::rmsnorm_f32_to_bf16(dxin.get(), ones.get(),
                                             reinterpret_cast<__nv_bfloat16*>(xn.get()), norm_rows,
                                             p.cols, 1e-6f, nullptr, stream));
    GemvArgs a;
    a.w = q.get();
    a.layout = layout;
    a.scale = scale.get();
    a.bias = bias.get();
    a.rows = p.rows;
    a.cols = p.cols;
    a.x = reinterpret_cast<const __nv_bfloat16*>(xn.get() + x_off);
    a.batch = p.batch;
    a.out = out.get();
    a.pdl = true;
    ASSERT_TRUE(kernels::gemv_w8a16(a, cfg, stream));
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto all_x = xn.download();
    h.x.assign(all_x.begin() + static_cast<std::ptrdiff_t>(x_off), all_x.end());
    const auto want = expected(p, h, GemvEpilogue::kStoreF32, nullptr);
    const auto got_f = out.download();
    const std::vector<double> got(got_f.begin(), got_f.end());
    EXPECT_LT(ref::rel_l2(got, want), 1e-5) << kernels::describe(cfg);
  }
  cudaStreamDestroy(stream);
}

TEST(Gemv, PdlLaunchWaitsForTheProducerOfX) {
  check_waits_for_the_producer_of_x(
      {GemvConfig{1, 8, 0}, GemvConfig{1, 8, 8}, GemvConfig{1, 16, 4}, GemvConfig{1, 8, 2, true}},
      kernels::WeightLayout::kRowMajor, 0x9d1);
}

// Arguments for a one-row-of-x GEMV over the given buffers (shape checks).
GemvArgs small_args(DeviceBuffer<int8_t>& q, DeviceBuffer<float>& s, DeviceBuffer<uint16_t>& x,
                    DeviceBuffer<float>& out, int rows, int cols) {
  GemvArgs a;
  a.w = q.get();
  a.scale = s.get();
  a.x = reinterpret_cast<const __nv_bfloat16*>(x.get());
  a.out = out.get();
  a.rows = rows;
  a.cols = cols;
  a.batch = 1;
  return a;
}

TEST(Gemv, RejectsBadArguments) {
  GemvArgs a;
  EXPECT_FALSE(kernels::gemv_w8a16(a, nullptr));
  DeviceBuffer<int8_t> q(64);
  DeviceBuffer<float> s(2), out(64);
  DeviceBuffer<uint16_t> x(64);
  a = small_args(q, s, x, out, 2, 32);
  EXPECT_TRUE(kernels::gemv_w8a16(a, nullptr));
  a.epilogue = GemvEpilogue::kSiluMulBf16;  // 2 rows cannot hold a gate/up group
  EXPECT_FALSE(kernels::gemv_w8a16(a, nullptr));
  a.epilogue = GemvEpilogue::kStoreF32;
  EXPECT_FALSE(kernels::gemv_w8a16(a, GemvConfig{3, 8}, nullptr));
  EXPECT_FALSE(kernels::gemv_w8a16(a, GemvConfig{1, 8, 2}, nullptr));  // unroll 2 is for 2 tiles
  EXPECT_FALSE(kernels::gemv_w8a16(a, GemvConfig{2, 8, 8}, nullptr));
  EXPECT_FALSE(kernels::gemv_w8a16(a, GemvConfig{2, 8, 2, true}, nullptr));  // pipelined: 1 tile
  EXPECT_FALSE(kernels::gemv_w8a16(a, GemvConfig{1, 8, 4, true}, nullptr));  // pipelined: pairs
  EXPECT_TRUE(kernels::gemv_w8a16(a, GemvConfig{1, 8, 2, true}, nullptr));
  a.layout = kernels::WeightLayout::kTiled16x64;  // 2 x 32 is no whole 16 x 64 tile
  EXPECT_FALSE(kernels::gemv_w8a16(a, nullptr));
  a.layout = kernels::WeightLayout::kRowMajor;
  a.ld_out = 1;
  EXPECT_FALSE(kernels::gemv_w8a16(a, nullptr));
}

// The layout changes only where each weight is read from, not the order
// anything is summed in: tiled and row-major give bitwise the same outputs
// under every launch shape.
TEST(Gemv, TiledAndRowMajorWeightsAgreeBitwise) {
  const std::pair<Problem, GemvEpilogue> cases[] = {
      {{1024, 3584, 4, true}, GemvEpilogue::kStoreF32},
      {{256, 18944, 1, false}, GemvEpilogue::kResidualAddF32},
      {{2 * 1024, 3584, 3, false}, GemvEpilogue::kSiluMulBf16}};
  for (const auto& [p, epi] : cases) {
    std::mt19937_64 rng(test_seed() ^ (p.rows * 17 + p.cols));
    const Host h = make_host(p, rng);
    std::vector<float> resid;
    if (epi == GemvEpilogue::kResidualAddF32)
      resid = ref::random_f32(static_cast<size_t>(p.batch) * p.rows, rng, -4.0f, 4.0f);
    const auto* rp = resid.empty() ? nullptr : &resid;
    for (const auto& cfg : kernels::gemv_configs(epi, true)) {
      const auto row_major = run(p, h, epi, &cfg, rp, kernels::WeightLayout::kRowMajor);
      const auto tiled = run(p, h, epi, &cfg, rp, kernels::WeightLayout::kTiled16x64);
      int diff = 0;
      for (size_t i = 0; i < tiled.size(); ++i) diff += tiled[i] != row_major[i];
      EXPECT_EQ(diff, 0) << p.rows << "x" << p.cols << " under " << kernels::describe(cfg);
    }
  }
}

// The ring kernel (sm_90, tiled weights): every shape of it against the
// reference at the 7B decode shapes and at edge sizes: one row block, fewer
// chunks than consumer warps, a last stage that is partly empty, many row
// blocks per block, down_proj's K (activations converted chunk by chunk
// rather than held in registers), batches over 8 (two passes).
class GemvRing : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::gemv_ring_supported()) GTEST_SKIP() << "the ring kernel needs sm_90";
  }
};

TEST_F(GemvRing, SevenBShapesMatchReference) {
  const auto f32 = kernels::gemv_ring_configs(GemvEpilogue::kStoreF32);
  const auto res = kernels::gemv_ring_configs(GemvEpilogue::kResidualAddF32);
  const auto silu = kernels::gemv_ring_configs(GemvEpilogue::kSiluMulBf16);
  check({4608, 3584, 1, true}, GemvEpilogue::kStoreF32, f32);
  check({4608, 3584, 5, true}, GemvEpilogue::kStoreF32, f32);
  check({3584, 3584, 1, false}, GemvEpilogue::kResidualAddF32, res);
  check({3584, 3584, 8, false}, GemvEpilogue::kResidualAddF32, res);
  check({3584, 18944, 1, false}, GemvEpilogue::kResidualAddF32, res);
  check({3584, 18944, 4, false}, GemvEpilogue::kResidualAddF32, res);
  check({2 * 18944, 3584, 1, false}, GemvEpilogue::kSiluMulBf16, silu);
  check({2 * 18944, 3584, 3, false}, GemvEpilogue::kSiluMulBf16, silu);
  check({152064, 3584, 2, false}, GemvEpilogue::kStoreF32, f32);
}

TEST_F(GemvRing, EdgeSizesMatchReference) {
  for (auto epi :
       {GemvEpilogue::kStoreF32, GemvEpilogue::kResidualAddF32, GemvEpilogue::kStoreBf16}) {
    const auto cfgs = kernels::gemv_ring_configs(epi);
    for (const Problem& p : {Problem{32, 64, 1, true}, Problem{32, 64 * 9, 3, false},
                             Problem{64, 64 * 13, 8, true}, Problem{96, 4160, 9, true},
                             Problem{32 * 700, 128, 2, false}, Problem{32, 64 * 70, 4, true}})
      check(p, epi, cfgs);
  }
  const auto silu = kernels::gemv_ring_configs(GemvEpilogue::kSiluMulBf16);
  check({2 * 16, 64, 1, true}, GemvEpilogue::kSiluMulBf16, silu);
  check({2 * 48, 64 * 11, 9, true}, GemvEpilogue::kSiluMulBf16, silu);
}

// The ring kernel adds up in the grouped kernel's order (warp w takes
// chunks w, w + warps, ...), which is what lets the tuner pair the two:
// bitwise the same outputs for the same warp count, at every batch.
TEST_F(GemvRing, AgreesBitwiseWithTheGroupedKernel) {
  const std::pair<Problem, GemvEpilogue> cases[] = {
      {{1024, 3584, 1, true}, GemvEpilogue::kStoreF32},
      {{1024, 3584, 8, true}, GemvEpilogue::kStoreF32},
      {{256, 18944, 3, false}, GemvEpilogue::kResidualAddF32},
      {{2 * 1024, 3584, 4, false}, GemvEpilogue::kSiluMulBf16}};
  for (const auto& [p, epi] : cases) {
    std::mt19937_64 rng(test_seed() ^ (p.rows * 23 + p.cols + p.batch));
    const Host h = make_host(p, rng);
    std::vector<float> resid;
    if (epi == GemvEpilogue::kResidualAddF32)
      resid = ref::random_f32(static_cast<size_t>(p.batch) * p.rows, rng, -4.0f, 4.0f);
    const auto* rp = resid.empty() ? nullptr : &resid;
    for (const auto& ring : kernels::gemv_ring_configs(epi)) {
      const GemvConfig grouped{ring.tiles, ring.warps, ring.tiles == 1 ? 4 : 2};
      ASSERT_TRUE(kernels::same_summation_order(ring, grouped));
      const auto a = run(p, h, epi, &ring, rp, kernels::WeightLayout::kTiled16x64);
      const auto b = run(p, h, epi, &grouped, rp, kernels::WeightLayout::kTiled16x64);
      int diff = 0;
      for (size_t i = 0; i < a.size(); ++i) diff += a[i] != b[i];
      EXPECT_EQ(diff, 0) << p.rows << "x" << p.cols << " batch " << p.batch << ": "
                         << kernels::describe(ring) << " against " << kernels::describe(grouped);
    }
  }
}

// Under programmatic launch the producer warp streams weights at once, but
// the consumers must still wait for the kernel that writes x.
TEST_F(GemvRing, PdlLaunchWaitsForTheProducerOfX) {
  check_waits_for_the_producer_of_x(kernels::gemv_ring_configs(GemvEpilogue::kStoreF32),
                                    kernels::WeightLayout::kTiled16x64, 0x9d2);
}

// Shapes the ring kernel cannot serve are refused with a clear error, not
// run: row-major weights, rows that do not fill its row blocks.
TEST_F(GemvRing, RefusesWhatItCannotServe) {
  DeviceBuffer<int8_t> q(48 * 64);
  DeviceBuffer<float> s(48), out(48);
  DeviceBuffer<uint16_t> x(64);
  GemvArgs a = small_args(q, s, x, out, 48, 64);
  GemvConfig ring{1, 8};
  ring.ring_kb = 48;
  EXPECT_FALSE(kernels::gemv_w8a16(a, ring, nullptr));  // row-major
  a.layout = kernels::WeightLayout::kTiled16x64;
  EXPECT_TRUE(kernels::gemv_w8a16(a, ring, nullptr));
  ring.tiles = 2;  // 48 rows are one and a half row blocks of 32
  EXPECT_FALSE(kernels::gemv_w8a16(a, ring, nullptr));
  ring.tiles = 1;
  ring.ring_kb = 64;  // not a ring size there is a kernel for
  EXPECT_FALSE(kernels::gemv_w8a16(a, ring, nullptr));
  ring.ring_kb = 48;
  ring.warps = 16;
  EXPECT_FALSE(kernels::gemv_w8a16(a, ring, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace ringserve::testing
