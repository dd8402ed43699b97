// RMSNorm, embedding gather, RoPE + KV write, prefill epilogues, cuBLAS GEMM
// and the int8 conversions against their references.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "device_buffer.h"
#include "epilogue.h"
#include "gemm_cublas.h"
#include "gemv_w8a16.h"
#include "model/rope_frequencies.h"
#include "norm.h"
#include "quantize.h"
#include "reference.h"
#include "rope_kv.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

const __nv_bfloat16* bf(const DeviceBuffer<uint16_t>& b) {
  return reinterpret_cast<const __nv_bfloat16*>(b.get());
}
__nv_bfloat16* bf(DeviceBuffer<uint16_t>& b) {
  return reinterpret_cast<__nv_bfloat16*>(b.get());
}

std::vector<double> as_double(const std::vector<uint16_t>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = ref::bf16(v[i]);
  return d;
}

TEST(RmsNorm, MatchesReferenceWithAndWithoutRowIndex) {
  std::mt19937_64 rng(test_seed());
  // Widths cover the vector kernel at 1, 2, 4 and 8 float4 per thread (3584
  // is the 7B's hidden size), a partial last warp (100), and the scalar
  // fallback for cols % 4 != 0 (102) and for rows too wide to hold (18944).
  for (auto [rows, cols] :
       {std::pair{5, 3584}, std::pair{3, 64}, std::pair{2, 100}, std::pair{2, 102},
        std::pair{3, 4100}, std::pair{2, 8192}, std::pair{2, 16384}, std::pair{2, 18944}}) {
    auto x = ref::random_f32(static_cast<size_t>(rows) * cols, rng, -30.0f, 30.0f);
    auto w = ref::random_f32(cols, rng, 0.5f, 1.5f);
    DeviceBuffer<float> dx(x), dw(w);
    DeviceBuffer<uint16_t> y(static_cast<size_t>(rows) * cols);
    y.poison();
    ASSERT_TRUE(kernels::rmsnorm_f32_to_bf16(dx.get(), dw.get(), bf(y), rows, cols, 1e-6f, nullptr,
                                             nullptr));
    EXPECT_LT(ref::rel_l2(as_double(y.download()), ref::rmsnorm(x, w, rows, cols, 1e-6)), 5e-3);

    // hi + lo halves carry the value to ~16 bits.
    DeviceBuffer<uint16_t> hi(static_cast<size_t>(rows) * cols), lo(hi.size());
    hi.poison();
    lo.poison();
    ASSERT_TRUE(kernels::rmsnorm_f32_to_bf16(dx.get(), dw.get(), bf(hi), rows, cols, 1e-6f, nullptr,
                                             nullptr, bf(lo)));
    auto h = as_double(hi.download()), l = as_double(lo.download());
    for (size_t i = 0; i < h.size(); ++i) h[i] += l[i];
    EXPECT_LT(ref::rel_l2(h, ref::rmsnorm(x, w, rows, cols, 1e-6)), 3e-5);

    // Row selection: the last row only, as the prefill does before lm_head.
    DeviceBuffer<int32_t> idx(std::vector<int32_t>{rows - 1});
    DeviceBuffer<uint16_t> y1(cols);
    y1.poison();
    ASSERT_TRUE(kernels::rmsnorm_f32_to_bf16(dx.get(), dw.get(), bf(y1), 1, cols, 1e-6f, idx.get(),
                                             nullptr));
    auto full = ref::rmsnorm(x, w, rows, cols, 1e-6);
    std::vector<double> last(full.end() - cols, full.end());
    EXPECT_LT(ref::rel_l2(as_double(y1.download()), last), 5e-3);
  }
}

TEST(RmsNorm, VectorAndScalarPathsAgree) {
  // A row starting one float in (not 16-byte aligned) takes the scalar path;
  // the same values aligned take the vector path. Same arithmetic per element,
  // only the sum of squares is added in another order.
  std::mt19937_64 rng(test_seed());
  const int rows = 2, cols = 3584;
  auto x = ref::random_f32(static_cast<size_t>(rows) * cols + 1, rng, -30.0f, 30.0f);
  auto w = ref::random_f32(cols, rng, 0.5f, 1.5f);
  std::vector<float> aligned_x(x.begin() + 1, x.end());
  DeviceBuffer<float> dx(x), dxa(aligned_x), dw(w);
  DeviceBuffer<uint16_t> y_scalar(static_cast<size_t>(rows) * cols), y_vec(y_scalar.size());
  y_scalar.poison();
  y_vec.poison();
  ASSERT_TRUE(kernels::rmsnorm_f32_to_bf16(dx.get() + 1, dw.get(), bf(y_scalar), rows, cols, 1e-6f,
                                           nullptr, nullptr));
  ASSERT_TRUE(kernels::rmsnorm_f32_to_bf16(dxa.get(), dw.get(), bf(y_vec), rows, cols, 1e-6f,
                                           nullptr, nullptr));
  auto a = as_double(y_scalar.download()), b = as_double(y_vec.download());
  EXPECT_LT(ref::rel_l2(a, b), 1e-3);
  EXPECT_LT(ref::rel_l2(b, ref::rmsnorm(aligned_x, w, rows, cols, 1e-6)), 5e-3);
}

TEST(Embedding, GathersRowsAndZeroesInvalidIds) {
  std::mt19937_64 rng(test_seed());
  const int vocab = 1000, cols = 3584;
  auto table = ref::random_bf16(static_cast<size_t>(vocab) * cols, rng);
  DeviceBuffer<uint16_t> dt(table);
  std::vector<int32_t> ids = {0, 999, 17, -1, 1000};
  DeviceBuffer<int32_t> did(ids);
  DeviceBuffer<float> out(ids.size() * cols);
  out.poison();
  ASSERT_TRUE(
      kernels::embedding_gather(bf(dt), vocab, cols, did.get(), ids.size(), out.get(), nullptr));
  auto o = out.download();
  for (size_t r = 0; r < ids.size(); ++r)
    for (int c = 0; c < cols; c += 97) {
      const float want = ids[r] >= 0 && ids[r] < vocab ? ref::bf16(table[ids[r] * cols + c]) : 0.0f;
      ASSERT_EQ(o[r * cols + c], want) << r << "," << c;
    }
}

struct RopeCase {
  int H, KVH, D;
};

// table: the inverse frequencies come from a device table (the engine's
// path) rather than being computed in the kernel; both must agree bit for bit.
void check_rope(const RopeCase& rc, bool raw_input, bool table = false) {
  std::mt19937_64 rng(test_seed() ^ rc.D);
  const int ntok = 6, BT = 16, nblocks = 8;
  const int width = (rc.H + 2 * rc.KVH) * rc.D;
  auto raw = ref::random_f32(static_cast<size_t>(ntok) * width, rng, -2.0f, 2.0f);
  auto scale = ref::random_f32(width, rng, 0.5f, 1.5f);
  auto bias = ref::random_f32(width, rng, -0.3f, 0.3f);
  std::vector<int32_t> pos = {0, 1, 7, 100, 2047, 4000};
  std::vector<int32_t> slots = {0, 5, 16, 33, 127, 64};
  const size_t cache_n = static_cast<size_t>(nblocks) * rc.KVH * BT * rc.D;
  DeviceBuffer<float> dq(raw), dscale(scale), dbias(bias);
  DeviceBuffer<int32_t> dpos(pos), dslots(slots);
  DeviceBuffer<uint16_t> qout(static_cast<size_t>(ntok) * rc.H * rc.D), kc(cache_n), vc(cache_n),
      kout(static_cast<size_t>(ntok) * rc.KVH * rc.D),
      vout(static_cast<size_t>(ntok) * rc.KVH * rc.D);
  for (auto* b : {&qout, &kc, &vc, &kout, &vout}) b->poison();
  kernels::RopeKvArgs a;
  a.ntok = ntok;
  a.num_heads = rc.H;
  a.num_kv_heads = rc.KVH;
  a.head_dim = rc.D;
  a.rope_theta = 10000.0f;
  a.positions = dpos.get();
  a.slots = dslots.get();
  a.block_tokens = BT;
  a.q_out = bf(qout);
  a.k_cache = bf(kc);
  a.v_cache = bf(vc);
  a.k_out = bf(kout);
  a.v_out = bf(vout);
  DeviceBuffer<float> dfreq(model::rope_inv_freq(rc.D, 10000.0));
  if (table) a.inv_freq = dfreq.get();
  if (raw_input) {
    ASSERT_TRUE(kernels::rope_kv_write(dq.get(), width, dscale.get(), dbias.get(), a, nullptr));
  } else {
    // The decode path gets scale and bias already applied.
    std::vector<float> applied(raw.size());
    for (int t = 0; t < ntok; ++t)
      for (int c = 0; c < width; ++c)
        applied[t * width + c] = raw[t * width + c] * scale[c] + bias[c];
    dq.upload(applied);
    ASSERT_TRUE(kernels::rope_kv_write(dq.get(), width, a, nullptr));
  }
  auto q = qout.download(), k = kc.download(), v = vc.download(), ko = kout.download(),
       vo = vout.download();
  if (table) {
    // The same call without the table: identical bits.
    a.inv_freq = nullptr;
    for (auto* b : {&qout, &kc, &kout}) b->poison();
    if (raw_input)
      ASSERT_TRUE(kernels::rope_kv_write(dq.get(), width, dscale.get(), dbias.get(), a, nullptr));
    else
      ASSERT_TRUE(kernels::rope_kv_write(dq.get(), width, a, nullptr));
    EXPECT_EQ(qout.download(), q);
    EXPECT_EQ(kc.download(), k);
    EXPECT_EQ(kout.download(), ko);
  }
  std::vector<double> got, want;
  for (int t = 0; t < ntok; ++t) {
    auto val = [&](int c) { return double(raw[t * width + c]) * scale[c] + bias[c]; };
    for (int h = 0; h < rc.H + 2 * rc.KVH; ++h) {
      std::vector<double> vec(rc.D);
      for (int d = 0; d < rc.D; ++d) vec[d] = val(h * rc.D + d);
      if (h < rc.H + rc.KVH) ref::rope(vec.data(), rc.D, pos[t], 10000.0);
      const int block = slots[t] / BT, off = slots[t] % BT;
      for (int d = 0; d < rc.D; ++d) {
        want.push_back(vec[d]);
        if (h < rc.H) {
          got.push_back(ref::bf16(q[(static_cast<size_t>(t) * rc.H + h) * rc.D + d]));
        } else {
          const int kvh = h < rc.H + rc.KVH ? h - rc.H : h - rc.H - rc.KVH;
          const auto& cache = h < rc.H + rc.KVH ? k : v;
          const auto& contig = h < rc.H + rc.KVH ? ko : vo;
          const size_t ci = ((static_cast<size_t>(block) * rc.KVH + kvh) * BT + off) * rc.D + d;
          got.push_back(ref::bf16(cache[ci]));
          ASSERT_EQ(cache[ci], contig[(static_cast<size_t>(t) * rc.KVH + kvh) * rc.D + d]);
        }
      }
    }
  }
  EXPECT_LT(ref::rel_l2(got, want), 5e-3);
}

TEST(RopeKv, Qwen7bHeadsF32Input) {
  check_rope({28, 4, 128}, false);
}
TEST(RopeKv, Qwen7bHeadsRawInputWithScaleAndBias) {
  check_rope({28, 4, 128}, true);
}
TEST(RopeKv, TinyHeads) {
  check_rope({4, 2, 16}, true);
}
TEST(RopeKv, PrecomputedFrequencyTableMatchesInKernelOnes) {
  check_rope({28, 4, 128}, false, true);
  check_rope({28, 4, 128}, true, true);
  check_rope({4, 2, 16}, true, true);
  check_rope({5, 1, 256}, false, true);  // widest head_dim; 7 heads, a partial group
}

TEST(RopeKv, FrequencyTableMatchesCpuEngineRule) {
  // The rule both engines use: bf16(float(1 / theta^(2i/d))).
  for (double theta : {10000.0, 1000000.0}) {
    auto f = model::rope_inv_freq(128, theta);
    ASSERT_EQ(f.size(), 64u);
    for (int i = 0; i < 64; ++i) {
      const auto exact = static_cast<float>(1.0 / std::pow(theta, (2.0 * i) / 128));
      EXPECT_EQ(f[i], static_cast<float>(ref::bf16(ref::to_bf16(exact)))) << i;
    }
  }
}

TEST(GemmCublas, NtMatchesReference) {
  std::mt19937_64 rng(test_seed());
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  for (auto [M, N, K] : {std::tuple{37, 96, 64}, std::tuple{512, 4608, 3584}}) {
    auto A = ref::random_bf16(static_cast<size_t>(M) * K, rng);
    auto B = ref::random_bf16(static_cast<size_t>(N) * K, rng);
    DeviceBuffer<uint16_t> dA(A), dB(B), dC(static_cast<size_t>(M) * N);
    dC.poison();
    ASSERT_TRUE(
        kernels::gemm_bf16_nt(h, M, N, K, bf(dA), K, bf(dB), K, dC.get(), CUDA_R_16BF, N, nullptr));
    auto C = as_double(dC.download());
    std::vector<double> want(static_cast<size_t>(M) * N);
    for (int m = 0; m < M; m += (M > 64 ? 7 : 1))
      for (int n = 0; n < N; ++n) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += double(ref::bf16(A[m * K + k])) * ref::bf16(B[n * K + k]);
        want[static_cast<size_t>(m) * N + n] = s;
      }
    std::vector<double> g2, w2;
    for (int m = 0; m < M; m += (M > 64 ? 7 : 1))
      for (int n = 0; n < N; ++n) {
        g2.push_back(C[static_cast<size_t>(m) * N + n]);
        w2.push_back(want[static_cast<size_t>(m) * N + n]);
      }
    EXPECT_LT(ref::rel_l2(g2, w2), 5e-3) << M << "x" << N << "x" << K;
  }
  cublasDestroy(h);
}

TEST(Epilogue, ResidualAddAndSiluMul) {
  std::mt19937_64 rng(test_seed());
  const int T = 5, N = 96, I = 48;
  auto c = ref::random_f32(static_cast<size_t>(T) * N, rng, -40.0f, 40.0f);
  auto scale = ref::random_f32(N, rng, 0.01f, 0.05f);
  auto bias = ref::random_f32(N, rng, -0.2f, 0.2f);
  auto resid = ref::random_f32(static_cast<size_t>(T) * N, rng, -3.0f, 3.0f);
  DeviceBuffer<float> dc(c);
  DeviceBuffer<float> ds(scale), db(bias), dr(resid);
  ASSERT_TRUE(
      kernels::residual_add_scaled(dc.get(), N, ds.get(), db.get(), dr.get(), T, N, nullptr));
  auto r = dr.download();
  std::vector<double> got(r.begin(), r.end()), want(r.size());
  for (int t = 0; t < T; ++t)
    for (int n = 0; n < N; ++n)
      want[t * N + n] = resid[t * N + n] + double(c[t * N + n]) * scale[n] + bias[n];
  EXPECT_LT(ref::rel_l2(got, want), 1e-6);

  DeviceBuffer<uint16_t> out(static_cast<size_t>(T) * I);
  out.poison();
  ASSERT_TRUE(kernels::silu_mul_scaled(dc.get(), N, ds.get(), nullptr, bf(out), T, I, nullptr));
  auto o = as_double(out.download());
  std::vector<double> w2(o.size());
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < I; ++j) {
      const int gr = kernels::packed_gate_row(j);
      const double g = double(c[t * N + gr]) * scale[gr];
      const double u = double(c[t * N + gr + 16]) * scale[gr + 16];
      w2[t * I + j] = g / (1 + std::exp(-g)) * u;
    }
  EXPECT_LT(ref::rel_l2(o, w2), 5e-3);
  EXPECT_FALSE(kernels::silu_mul_scaled(dc.get(), N, ds.get(), nullptr, bf(out), T, 50, nullptr));
}

TEST(Quantize, Int8ToBf16IsExact) {
  std::mt19937_64 rng(test_seed());
  for (size_t n : {size_t{1}, size_t{7}, size_t{4096}, size_t{1000003}}) {
    auto q = ref::random_int8(n, rng);
    if (n > 2) {
      q[0] = -128;
      q[1] = 127;
    }
    DeviceBuffer<int8_t> dq(q);
    DeviceBuffer<uint16_t> out(n);
    out.poison();
    ASSERT_TRUE(kernels::int8_to_bf16(dq.get(), bf(out), n, nullptr));
    auto o = out.download();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(ref::bf16(o[i]), static_cast<float>(q[i])) << i;
  }
}

// The GPU retiling and the tiled dequantization against the layout's
// definition (kernels::tiled_offset), element by element.
TEST(Quantize, TilesAndUntilesByTheLayout) {
  std::mt19937_64 rng(test_seed() ^ 0x711e);
  for (auto [rows, cols] :
       {std::pair{16, 64}, std::pair{48, 192}, std::pair{4608, 3584}, std::pair{32, 18944}}) {
    const size_t n = static_cast<size_t>(rows) * cols;
    const auto q = ref::random_int8(n, rng);
    DeviceBuffer<int8_t> src(q), tiled(n);
    tiled.poison();
    ASSERT_TRUE(kernels::tile_int8_rows(src.get(), tiled.get(), rows, cols, nullptr));
    const auto t = tiled.download();
    int bad = 0;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        bad += t[kernels::tiled_offset(r, c, cols)] != q[static_cast<size_t>(r) * cols + c];
    EXPECT_EQ(bad, 0) << rows << "x" << cols;

    DeviceBuffer<uint16_t> out(n);
    out.poison();
    ASSERT_TRUE(kernels::int8_to_bf16(tiled.get(), bf(out), rows, cols,
                                      kernels::WeightLayout::kTiled16x64, nullptr));
    const auto o = out.download();
    bad = 0;
    for (size_t i = 0; i < n; ++i) bad += ref::bf16(o[i]) != static_cast<float>(q[i]);
    EXPECT_EQ(bad, 0) << rows << "x" << cols << " (back to row-major bf16)";
  }
  DeviceBuffer<int8_t> a(17 * 64), b(17 * 64);
  EXPECT_FALSE(kernels::tile_int8_rows(a.get(), b.get(), 17, 64, nullptr));       // rows % 16
  EXPECT_FALSE(kernels::tile_int8_rows(a.get(), b.get(), 16, 40, nullptr));       // cols % 64
  EXPECT_FALSE(kernels::tile_int8_rows(a.get(), a.get() + 16, 16, 64, nullptr));  // overlap
  EXPECT_FALSE(
      kernels::int8_to_bf16(a.get(), nullptr, 17, 64, kernels::WeightLayout::kTiled16x64, nullptr));
}

TEST(Quantize, RowsMatchSymmetricPerRowRule) {
  std::mt19937_64 rng(test_seed());
  const int rows = 37, cols = 3584;
  auto w = ref::random_bf16(static_cast<size_t>(rows) * cols, rng, 0.05f);
  for (int c = 0; c < cols; ++c) w[5 * cols + c] = 0;  // an all-zero row
  DeviceBuffer<uint16_t> dw(w);
  DeviceBuffer<int8_t> q(w.size());
  DeviceBuffer<float> s(rows);
  q.poison();
  s.poison();
  ASSERT_TRUE(kernels::quantize_rows_bf16(bf(dw), rows, cols, q.get(), s.get(), nullptr));
  auto hq = q.download();
  auto hs = s.download();
  for (int r = 0; r < rows; ++r) {
    float m = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, std::fabs(ref::bf16(w[r * cols + c])));
    const float scale = m / 127.0f;
    ASSERT_EQ(hs[r], scale) << r;
    for (int c = 0; c < cols; ++c) {
      const float want = scale > 0 ? std::nearbyint(ref::bf16(w[r * cols + c]) / scale) : 0.0f;
      ASSERT_EQ(hq[r * cols + c], static_cast<int8_t>(want)) << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace ringserve::testing
