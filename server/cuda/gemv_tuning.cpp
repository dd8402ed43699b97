#include "cuda/gemv_tuning.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "cuda_check.h"
#include "util/log.h"

namespace ringserve::cuda {
namespace {

using kernels::GemvArgs;
using kernels::GemvConfig;
using kernels::GemvEpilogue;

// One decode GEMV family: its matrices (one per layer), epilogue and the
// workspace buffers it reads and writes in the forward pass.
struct Family {
  const char* name;
  std::vector<DeviceLinear*> mats;
  GemvEpilogue epi;
  __nv_bfloat16* x;
  void* out;
  int batch;      // timing batch of the single-sequence shape
  int timed = 0;  // mats [0, timed) are timed: on the GPU (a streamed layer's slot holds
                  // whichever layer came last; zero-copy ones would time the link)
};

bool is_bf16_out(GemvEpilogue e) {
  return e == GemvEpilogue::kStoreBf16 || e == GemvEpilogue::kSiluMulBf16;
}

int out_cols(const Family& f) {
  return f.epi == GemvEpilogue::kSiluMulBf16 ? f.mats[0]->rows / 2 : f.mats[0]->rows;
}

GemvArgs args_for(const Family& f, const DeviceLinear& m, int batch) {
  return gemv_args(m, f.x, batch, f.out, f.epi);
}

// Time per launch inside a CUDA graph, as the decode step runs it: a graph
// of launches that rotate over every layer's copy of the matrix (so the
// timing is of DRAM, not of L2), replayed between two events. Timing lone
// launches instead adds several microseconds of launch and event latency
// to each, which favours shapes that are not the fastest back to back.
Expected<float> time_config(const Family& f, const GemvConfig& cfg, int batch, cudaStream_t stream,
                            cudaEvent_t start, cudaEvent_t stop) {
  const int launches = std::max(8, f.timed);
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  Status captured = ok();
  for (int r = 0; r < launches && captured; ++r)
    captured = kernels::gemv_w8a16(args_for(f, *f.mats[r % f.timed], batch), cfg, stream);
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  struct GraphGuard {
    cudaGraph_t g;
    cudaGraphExec_t e = nullptr;
    ~GraphGuard() {
      if (e) cudaGraphExecDestroy(e);
      cudaGraphDestroy(g);
    }
  } guard{graph};
  RS_TRY_STATUS(std::move(captured));
  CUDA_CHECK(cudaGraphInstantiate(&guard.e, graph, 0));
  CUDA_CHECK(cudaGraphLaunch(guard.e, stream));  // upload and warm-up
  std::vector<float> times;
  for (int r = 0; r < 3; ++r) {
    CUDA_CHECK(cudaEventRecord(start, stream));
    CUDA_CHECK(cudaGraphLaunch(guard.e, stream));
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms / launches);
  }
  std::sort(times.begin(), times.end());
  return times[1];
}

// Runs `cfg` on the first layer's matrix with a zeroed output (the residual
// epilogue accumulates into it) and returns the output as floats.
Expected<std::vector<float>> run_once(const Family& f, const GemvConfig& cfg, int batch,
                                      cudaStream_t stream) {
  const size_t n = static_cast<size_t>(batch) * out_cols(f);
  const size_t elem = is_bf16_out(f.epi) ? 2 : 4;
  CUDA_CHECK(cudaMemsetAsync(f.out, 0, n * elem, stream));
  RS_TRY_STATUS(kernels::gemv_w8a16(args_for(f, *f.mats[0], batch), cfg, stream));
  std::vector<float> y(n);
  if (elem == 4) {
    CUDA_CHECK(cudaMemcpyAsync(y.data(), f.out, n * 4, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  } else {
    std::vector<uint16_t> h(n);
    CUDA_CHECK(cudaMemcpyAsync(h.data(), f.out, n * 2, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(h[i]) << 16;
      std::memcpy(&y[i], &bits, 4);
    }
  }
  return y;
}

// A candidate must reproduce the reference variant's output up to summation
// order (fp32) or one bf16 rounding step: relative L2 error <= 2e-3 and no
// element off by more than 2% of the largest reference magnitude. A wrong
// kernel misses by O(1), so the margin only has to absorb rounding.
bool agrees(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0, max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return false;
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(want[i])));
    max_diff = std::max(max_diff, std::fabs(d));
  }
  if (den == 0) return num == 0;
  return std::sqrt(num / den) <= 2e-3 && max_diff <= 0.02 * max_ref;
}

}  // namespace

Expected<std::string> tune_gemv(DeviceModel& model, Workspace& ws, cudaStream_t stream,
                                bool with_persistent, bool with_ring) {
  auto log = log::get("engine");
  auto& layers = model.mutable_layers();
  // Verification batch: every batch row a decode step can use, up to the 8
  // rows of one pass (the fragment layout changes with the row index).
  const int vbatch = std::clamp(ws.limits.max_batch, 1, 8);

  std::vector<Family> families;
  auto layer_family = [&](const char* name, DeviceLinear DeviceLayer::*member, GemvEpilogue epi,
                          __nv_bfloat16* x, void* out) {
    Family f{name, {}, epi, x, out, 1, model.device_layers()};
    for (auto& l : layers) f.mats.push_back(&(l.*member));
    families.push_back(std::move(f));
  };
  layer_family("qkv", &DeviceLayer::qkv, GemvEpilogue::kStoreF32, ws.xn, ws.qkv_f32);
  layer_family("o", &DeviceLayer::o, GemvEpilogue::kResidualAddF32, ws.attn, ws.resid);
  layer_family("gate_up", &DeviceLayer::gate_up, GemvEpilogue::kSiluMulBf16, ws.xn, ws.act);
  layer_family("down", &DeviceLayer::down, GemvEpilogue::kResidualAddF32, ws.act, ws.resid);
  // The head runs with the hi and lo halves of its input: batch 2 per row.
  families.push_back(Family{
      "lm_head", {&model.mutable_lm_head()}, GemvEpilogue::kStoreF32, ws.xn, ws.logits, 2, 1});

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::string summary;
  Status status = ok();
  int rejected = 0;

  auto tune = [&](Family& f) -> Expected<GemvShapes> {
    const DeviceLinear& m0 = *f.mats[0];
    const bool head = f.name == std::string("lm_head");
    // Verification rows, which are also the batch the wide shape is timed
    // at: the engine's widest decode batch within one pass of 8 rows (the
    // head runs two rows per sequence).
    const int vb = head ? std::min(8, 2 * vbatch) : vbatch;
    // Random finite activations (every row the verification uses).
    std::vector<uint16_t> xh(static_cast<size_t>(vb) * m0.cols);
    for (auto& v : xh) {
      const float val = dist(rng);
      uint32_t bits;
      std::memcpy(&bits, &val, 4);
      v = static_cast<uint16_t>(bits >> 16);
    }
    CUDA_CHECK(cudaMemcpyAsync(f.x, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice, stream));
    // The reference: the original kernel at its default shape (what every
    // GEMV ran before tuning existed).
    GemvConfig ref_cfg = kernels::default_gemv_config(m0.rows, m0.cols, f.epi);
    ref_cfg.unroll = 0;
    const auto want = RS_TRY(run_once(f, ref_cfg, vb, stream));

    std::vector<GemvConfig> candidates{ref_cfg};
    std::vector<GemvConfig> shapes_to_try = kernels::gemv_configs(f.epi, with_persistent);
    // The ring kernel streams with TMA from device memory: only where every
    // layer's matrix is on the GPU, laid out as the first one is.
    const bool ring = with_ring && f.timed == static_cast<int>(f.mats.size()) &&
                      std::all_of(f.mats.begin(), f.mats.end(),
                                  [&](const DeviceLinear* m) { return m->layout == m0.layout; });
    if (ring)
      for (const GemvConfig& cfg : kernels::gemv_ring_configs_for(f.epi, m0.rows, m0.layout))
        shapes_to_try.push_back(cfg);
    for (const GemvConfig& cfg : shapes_to_try) {
      if (cfg.tiles == ref_cfg.tiles && cfg.warps == ref_cfg.warps && cfg.unroll == 0 &&
          !cfg.pipelined && cfg.ring_kb == 0)
        continue;
      // A shape that cannot launch here (a launch error, not a fault: those
      // would poison the context and fail the next call) is skipped.
      const auto got = run_once(f, cfg, vb, stream);
      if (!got) {
        ++rejected;
        log->warn("cuda: GEMV {} {}x{}: variant {} does not run: {}; not used", f.name, m0.rows,
                  m0.cols, kernels::describe(cfg), got.error().to_string());
        continue;
      }
      if (!agrees(*got, want)) {
        ++rejected;
        log->warn("cuda: GEMV {} {}x{}: variant {} disagrees with the reference; not used", f.name,
                  m0.rows, m0.cols, kernels::describe(cfg));
        continue;
      }
      candidates.push_back(cfg);
    }

    struct Pick {
      GemvConfig cfg;
      float ms = std::numeric_limits<float>::infinity();
    };
    // The fastest candidate at `batch`; with `like`, only among those that
    // add up in its order (it qualifies itself, so there is always one).
    // ref_ms, if given, receives the reference's time (candidates[0]).
    // Near-ties go to the first shape (pick_first_within): timings of such
    // shapes swap places from one start to the next, and a different
    // summation order would change the logits' low bits, and so which
    // token a seeded request samples, every time the server restarts.
    auto fastest = [&](int batch, const GemvConfig* like, float* ref_ms) -> Expected<Pick> {
      std::vector<Pick> timed;
      std::vector<float> times;
      for (size_t i = 0; i < candidates.size(); ++i) {
        const GemvConfig& cfg = candidates[i];
        if (like && !kernels::same_summation_order(cfg, *like)) continue;
        const float ms = RS_TRY(time_config(f, cfg, batch, stream, start, stop));
        if (i == 0 && ref_ms) *ref_ms = ms;
        timed.push_back(Pick{cfg, ms});
        times.push_back(ms);
      }
      const int pick = pick_first_within(times);
      return pick < 0 ? Pick{} : timed[static_cast<size_t>(pick)];
    };
    auto gbs = [&](float ms) {
      return static_cast<double>(m0.rows) * m0.cols / (static_cast<double>(ms) * 1e-3) / 1e9;
    };
    float ref_ms = 0.0f;
    const Pick one = RS_TRY(fastest(f.batch, nullptr, &ref_ms));
    GemvShapes shapes{one.cfg, one.cfg};
    summary += fmt::format("{} {} {:.1f}us (ref {:.1f}us, {:.0f} GB/s)", f.name,
                           kernels::describe(one.cfg), one.ms * 1e3, ref_ms * 1e3, gbs(one.ms));
    // A sequence's tokens must not depend on what it is batched with (seeded
    // sampling is reproducible), so the wide shape is chosen among those that
    // add up in the batch-1 shape's order: bitwise the same logits per row.
    if (vb > f.batch) {
      const Pick many = RS_TRY(fastest(vb, &one.cfg, nullptr));
      shapes.multi = many.cfg;
      summary += fmt::format(", batch {}: {} {:.1f}us", head ? vb / 2 : vb,
                             kernels::describe(many.cfg), many.ms * 1e3);
    }
    summary += "; ";
    return shapes;
  };

  for (auto& f : families) {
    if (f.timed == 0) {  // every layer off the GPU: keep the default shapes
      summary += fmt::format("{} default (no layer on the GPU to time); ", f.name);
      continue;
    }
    auto shapes = tune(f);
    if (!shapes) {
      status = std::move(shapes).error();
      break;
    }
    for (DeviceLinear* m : f.mats) m->gemv = *shapes;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status) return std::move(status).error();
  if (rejected > 0)
    summary += fmt::format("{} variant(s) rejected (wrong output or no launch)", rejected);
  return summary;
}

}  // namespace ringserve::cuda
