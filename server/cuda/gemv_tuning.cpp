#include "cuda/gemv_tuning.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "cuda_check.h"

namespace ringserve::cuda {
namespace {

using kernels::GemvArgs;
using kernels::GemvConfig;
using kernels::GemvEpilogue;

// Median time of a few launches that rotate over every layer's copy of the
// matrix, so the timing is of DRAM, not of L2.
Expected<float> time_config(const std::vector<const DeviceLinear*>& mats, GemvEpilogue epi,
                            int batch, const GemvConfig& cfg, Workspace& ws, cudaStream_t stream,
                            cudaEvent_t start, cudaEvent_t stop) {
  GemvArgs a;
  a.rows = mats[0]->rows;
  a.cols = mats[0]->cols;
  a.x = ws.xn;
  a.batch = batch;
  a.epilogue = epi;
  a.out = epi == GemvEpilogue::kSiluMulBf16 ? static_cast<void*>(ws.act)
          : epi == GemvEpilogue::kResidualAddF32 ? static_cast<void*>(ws.resid)
                                                 : static_cast<void*>(ws.logits);
  std::vector<float> times;
  const int runs = 9;
  for (int r = 0; r < runs + 2; ++r) {
    const DeviceLinear* m = mats[r % mats.size()];
    a.w = m->q;
    a.scale = m->scale;
    a.bias = m->bias;
    CUDA_CHECK(cudaEventRecord(start, stream));
    RS_TRY_STATUS(kernels::gemv_w8a16(a, cfg, stream));
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r >= 2) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

Expected<std::string> tune_gemv(DeviceModel& model, Workspace& ws, cudaStream_t stream) {
  // The inputs only need to be finite: zero the activations once.
  CUDA_CHECK(cudaMemsetAsync(ws.xn, 0, sizeof(__nv_bfloat16) * 2 * model.config().hidden_size,
                             stream));
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  struct Family {
    const char* name;
    DeviceLinear DeviceLayer::*member;
    GemvEpilogue epi;
  };
  const Family families[] = {{"qkv", &DeviceLayer::qkv, GemvEpilogue::kStoreF32},
                             {"o", &DeviceLayer::o, GemvEpilogue::kResidualAddF32},
                             {"gate_up", &DeviceLayer::gate_up, GemvEpilogue::kSiluMulBf16},
                             {"down", &DeviceLayer::down, GemvEpilogue::kResidualAddF32}};
  std::string summary;
  Status status = ok();
  auto tune = [&](const char* name, std::vector<const DeviceLinear*> mats, GemvEpilogue epi,
                  int batch) -> Expected<GemvConfig> {
    GemvConfig best = mats[0]->gemv;
    float best_ms = 1e30f;
    for (int tiles : {1, 2}) {
      if (epi == GemvEpilogue::kSiluMulBf16 && tiles != 2) continue;
      for (int warps : {4, 8, 16}) {
        const GemvConfig cfg{tiles, warps};
        const float ms = RS_TRY(time_config(mats, epi, batch, cfg, ws, stream, start, stop));
        if (ms < best_ms) {
          best_ms = ms;
          best = cfg;
        }
      }
    }
    summary += fmt::format("{} t{}w{} {:.1f}us; ", name, best.tiles, best.warps, best_ms * 1e3);
    return best;
  };
  auto& layers = model.mutable_layers();
  for (const auto& f : families) {
    std::vector<const DeviceLinear*> mats;
    for (const auto& l : layers) mats.push_back(&(l.*f.member));
    auto cfg = tune(f.name, mats, f.epi, 1);
    if (!cfg) {
      status = std::move(cfg).error();
      break;
    }
    for (auto& l : layers) (l.*f.member).gemv = *cfg;
  }
  if (status) {
    // The head runs with the hi and lo halves of its input: batch 2.
    auto cfg = tune("lm_head", {&model.lm_head()}, GemvEpilogue::kStoreF32, 2);
    if (cfg) model.mutable_lm_head().gemv = *cfg;
    else status = std::move(cfg).error();
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status) return std::move(status).error();
  return summary;
}

}  // namespace ringserve::cuda
