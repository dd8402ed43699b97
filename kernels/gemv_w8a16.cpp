#include "gemv_w8a16.h"

#include <fmt/format.h>

#include "cuda_check.h"

namespace ringserve::kernels {

GemvConfig default_gemv_config(int rows, int /*cols*/, GemvEpilogue epilogue) {
  GemvConfig cfg;
  cfg.tiles = epilogue == GemvEpilogue::kSiluMulBf16 ? 2 : 1;
  const int blocks = (rows + 16 * cfg.tiles - 1) / (16 * cfg.tiles);
  // Few row tiles (o_proj, down_proj: 224) need a wider K split to keep
  // enough loads in flight on 132 SMs; many tiles do better with short blocks.
  cfg.warps = blocks < 600 ? 16 : (blocks < 2000 ? 8 : 4);
  return cfg;
}

std::vector<GemvConfig> gemv_configs(GemvEpilogue epilogue, bool with_persistent) {
  std::vector<GemvConfig> out;
  for (bool persistent : {false, true})
    for (bool pipelined : {false, true})
      for (int tiles : {1, 2})
        for (int warps : {4, 8, 16})
          for (int unroll : {0, 2, 4, 8}) {
            const GemvConfig c{tiles, warps, unroll, pipelined, persistent};
            if (!gemv_config_valid(c)) continue;
            if (persistent && !with_persistent) continue;
            if (epilogue == GemvEpilogue::kSiluMulBf16 && tiles != 2) continue;
            out.push_back(c);
          }
  return out;
}

std::vector<GemvConfig> gemv_ring_configs(GemvEpilogue epilogue) {
  std::vector<GemvConfig> out;
  for (int tiles : {1, 2})
    for (int warps : {4, 8})
      for (int kb : {48, 96}) {
        if (epilogue == GemvEpilogue::kSiluMulBf16 && tiles != 2) continue;
        GemvConfig c{tiles, warps};
        c.ring_kb = kb;
        out.push_back(c);
      }
  return out;
}

bool gemv_ring_supported() {
  int device = 0, major = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
         major >= 9;
}

bool gemv_config_fits(const GemvConfig& c, int rows, WeightLayout layout) {
  return c.ring_kb == 0 || (layout == WeightLayout::kTiled16x64 && rows % (16 * c.tiles) == 0);
}

std::vector<GemvConfig> gemv_ring_configs_for(GemvEpilogue epilogue, int rows,
                                              WeightLayout layout) {
  std::vector<GemvConfig> out;
  if (!gemv_ring_supported()) return out;
  for (const GemvConfig& c : gemv_ring_configs(epilogue))
    if (gemv_config_fits(c, rows, layout)) out.push_back(c);
  return out;
}

std::string describe(const GemvConfig& c) {
  if (c.ring_kb > 0) return fmt::format("t{}w{}ring{}", c.tiles, c.warps, c.ring_kb);
  return fmt::format("t{}w{}u{}{}{}", c.tiles, c.warps, c.unroll, c.pipelined ? "p" : "",
                     c.persistent ? "r" : "");
}

Status gemv_w8a16(const GemvArgs& args, cudaStream_t stream) {
  return gemv_w8a16(args, default_gemv_config(args.rows, args.cols, args.epilogue), stream);
}

Status gemv_w8a16(const GemvArgs& a, const GemvConfig& cfg, cudaStream_t stream) {
  if (a.rows <= 0 || a.cols <= 0 || a.batch <= 0)
    return make_error(Errc::kInvalidArgument, "gemv_w8a16: bad shape rows={} cols={} batch={}",
                      a.rows, a.cols, a.batch);
  if (!a.w || !a.scale || !a.x || !a.out)
    return make_error(Errc::kInvalidArgument, "gemv_w8a16: null pointer");
  if (cfg.tiles != 1 && cfg.tiles != 2)
    return make_error(Errc::kInvalidArgument, "gemv_w8a16: tiles must be 1 or 2");
  if (cfg.warps != 4 && cfg.warps != 8 && cfg.warps != 16)
    return make_error(Errc::kInvalidArgument, "gemv_w8a16: warps must be 4, 8 or 16");
  if (!gemv_config_valid(cfg))
    return make_error(Errc::kInvalidArgument, "gemv_w8a16: no kernel for launch shape {}",
                      describe(cfg));
  const bool silu = a.epilogue == GemvEpilogue::kSiluMulBf16;
  if (silu && (a.rows % 32 != 0 || cfg.tiles != 2))
    return make_error(Errc::kInvalidArgument,
                      "gemv_w8a16: gate/up packing needs rows % 32 == 0 and tiles == 2 (rows={})",
                      a.rows);
  if (a.layout == WeightLayout::kTiled16x64 &&
      (!tiled_layout_fits(a.rows, a.cols) || reinterpret_cast<uintptr_t>(a.w) % 16 != 0 ||
       reinterpret_cast<uintptr_t>(a.x) % 16 != 0))
    return make_error(Errc::kInvalidArgument,
                      "gemv_w8a16: tiled weights need rows % 16 == 0, cols % 64 == 0 and "
                      "16-byte aligned w and x (rows={} cols={})",
                      a.rows, a.cols);
  if (cfg.ring_kb > 0) {
    if (!gemv_config_fits(cfg, a.rows, a.layout))
      return make_error(Errc::kInvalidArgument,
                        "gemv_w8a16: the ring kernel needs tiled weights with rows a multiple of "
                        "{} (rows={})",
                        16 * cfg.tiles, a.rows);
    if (!gemv_ring_supported())
      return make_error(Errc::kUnsupported, "gemv_w8a16: the ring kernel needs sm_90 or newer");
  }
  const int out_cols = silu ? a.rows / 2 : a.rows;
  if (a.ld_out != 0 && a.ld_out < out_cols)
    return make_error(Errc::kInvalidArgument, "gemv_w8a16: ld_out {} < {}", a.ld_out, out_cols);
  CUDA_CHECK(detail::gemv_w8a16_launch(a, cfg, stream));
  return ok();
}

}  // namespace ringserve::kernels
