// Small-VRAM mode (issue 7) on synthetic:deepseek-r1-distill-qwen-7b: the
// host-to-device link first (pinned and pageable), then decode tokens/s at
// batch 1, 2, 4, 8 under GPU memory budgets for each offload strategy, each
// row against its floor (bytes streamed per step over the measured pinned
// rate). And `--load DIR`: how fast load_cuda_engine reads and quantizes a
// checkpoint.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench.h"
#include "cuda/cuda_engine.h"
#include "model/loader.h"
#include "offload/byte_size.h"
#include "offload/strategy.h"

namespace ringserve::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

const cuda::CudaEngineStats& stats(const engine::Engine& e) {
  return dynamic_cast<const cuda::CudaEngineIntrospection&>(e).stats();
}

std::vector<int32_t> random_prompt(int n, std::mt19937_64& rng, int vocab) {
  std::uniform_int_distribution<int> d(0, vocab - 1);
  std::vector<int32_t> p(n);
  for (auto& t : p) t = d(rng);
  return p;
}

struct DecodeResult {
  double tok_s = 0;
  double step_ms = 0;  // wall time per decode step (what a user sees)
  double gpu_ms = 0;   // median of the engine's own per-step GPU time
  std::string error;   // non-empty: the measurement failed
};

// decode_bench's pattern (engine_bench.cpp): `batch` sequences of a
// 512-token prompt, prefill, a few untimed steps (graph capture, the ring's
// first fill), then `steps` timed steps. Errors are returned, not fatal:
// one configuration failing must not cost the others' numbers.
DecodeResult decode(engine::Engine& e, int batch, int steps, std::mt19937_64& rng) {
  constexpr int kPrompt = 512, kWarm = 3;
  DecodeResult out;
  const uint64_t first_id = 1000;
  auto release_all = [&] {
    for (int i = 0; i < batch; ++i) e.release(first_id + i);
  };
  for (int i = 0; i < batch; ++i) {
    auto st = e.add(
        {first_id + i, random_prompt(kPrompt, rng, e.info().vocab_size), kWarm + steps + 2, {}});
    if (!st) {
      release_all();
      out.error = "add: " + st.error().to_string();
      return out;
    }
  }
  // Prefill may take more than one pass if the engine splits it; decode
  // starts once every sequence decodes in the same step.
  for (int guard = 0;; ++guard) {
    auto r = e.step();
    if (!r) {
      release_all();
      out.error = "prefill: " + r.error().to_string();
      return out;
    }
    if (r->decode_tokens == batch) break;
    if (guard > 16) {
      release_all();
      out.error = "sequences never decoded together";
      return out;
    }
  }
  for (int i = 0; i < kWarm; ++i) {
    if (auto r = e.step(); !r) {
      release_all();
      out.error = "decode: " + r.error().to_string();
      return out;
    }
  }
  std::vector<double> gpu;
  int tokens = 0;
  const auto t0 = Clock::now();
  for (int s = 0; s < steps; ++s) {
    auto r = e.step();
    if (!r) {
      release_all();
      out.error = "decode: " + r.error().to_string();
      return out;
    }
    tokens += r->decode_tokens;
    gpu.push_back(stats(e).last_decode_gpu_ms);
  }
  const double wall = seconds_since(t0);
  release_all();
  std::sort(gpu.begin(), gpu.end());
  out.tok_s = tokens / wall;
  out.step_ms = wall * 1e3 / steps;
  out.gpu_ms = gpu[gpu.size() / 2];
  return out;
}

struct Config {
  std::string budget;  // as typed ("8GiB"); "" = fully resident
  uint64_t budget_bytes = 0;
  offload::OffloadMode mode = offload::OffloadMode::kStream;
  int ring_slots = 2;
};

std::string config_label(const Config& c) {
  if (c.budget.empty()) return "resident";
  std::string s = offload::offload_mode_name(c.mode);
  if (c.mode == offload::OffloadMode::kStream) {
    // Appended piecewise: "/" + std::to_string() trips a GCC 12 -Wrestrict
    // false positive.
    s += '/';
    s += std::to_string(c.ring_slots);
  }
  return s;
}

void bench_config(const model::ModelWeights& weights, const Config& c, const LinkRates& link,
                  const std::vector<int>& batches, int steps, std::mt19937_64& rng) {
  const std::string budget = c.budget.empty() ? "none" : c.budget;
  const std::string label = config_label(c);
  engine::EngineOptions o;
  o.backend = engine::Backend::kCuda;
  o.max_batch = *std::max_element(batches.begin(), batches.end());
  // The server's default context cap: its KV pool (every sequence of the
  // largest batch at full context) and prefill workspace are what a budget
  // must hold before any layer, as in serving.
  o.max_context = 4096;
  o.gpu_memory_bytes = c.budget_bytes;
  o.offload = c.mode;
  o.ring_slots = c.ring_slots;
  const auto t0 = Clock::now();
  // create_cuda_engine takes the weights by value: each configuration gets
  // its own copy of the host weights, generated once for the whole run.
  auto built = cuda::create_cuda_engine(o, weights);
  if (!built) {
    const std::string msg = built.error().to_string();
    std::printf("  budget %-6s %-10s engine refused: %s\n", budget.c_str(), label.c_str(),
                msg.c_str());
    std::printf("RESULT offload budget=%s strategy=%s ring=%d error=\"%s\"\n", budget.c_str(),
                offload::offload_mode_name(c.mode), c.ring_slots, msg.c_str());
    std::fflush(stdout);
    return;
  }
  auto e = std::move(built).value();
  const auto& s = stats(*e);
  // The strategy the engine settled on (auto resolves at start-up; an
  // engine with room for everything streams nothing whatever was asked).
  const std::string strategy = s.offload_strategy.empty() ? "resident" : s.offload_strategy;
  std::printf(
      "  budget %-6s %-10s built in %.1f s: %d resident + %d streamed layers, %.3f GB streamed "
      "per step, %.2f GB on the GPU, %.2f GB pinned host; engine's start-up link test: H2D "
      "%.1f GB/s, zero-copy %.1f GB/s\n",
      budget.c_str(), label.c_str(), seconds_since(t0), s.resident_layers, s.streamed_layers,
      s.streamed_bytes_per_step / 1e9, s.gpu_bytes / 1e9, s.host_pinned_bytes / 1e9, s.h2d_gbps,
      s.zerocopy_gbps);
  for (const auto& line : s.plan_lines) std::printf("    plan: %s\n", line.c_str());
  std::fflush(stdout);
  for (int batch : batches) {
    const DecodeResult r = decode(*e, batch, steps, rng);
    if (!r.error.empty()) {
      std::printf("  budget %-6s %-10s batch %d failed: %s\n", budget.c_str(), label.c_str(), batch,
                  r.error.c_str());
      std::printf("RESULT offload budget=%s strategy=%s ring=%d batch=%d error=\"%s\"\n",
                  budget.c_str(), strategy.c_str(), c.ring_slots, batch, r.error.c_str());
      std::fflush(stdout);
      continue;
    }
    const double bytes = static_cast<double>(s.streamed_bytes_per_step);
    // Link rate over the whole wall step: what the stream keeps the link
    // busy with. >= 90 % of the pinned copy rate means the copies (or the
    // zero-copy reads) are the step, the compute hidden under them.
    const double link_gbs = bytes / (r.step_ms * 1e-3) / 1e9;
    const double pct = link.pinned_gbs > 0 ? 100.0 * link_gbs / link.pinned_gbs : 0.0;
    const double floor_ms = link.pinned_gbs > 0 ? bytes / (link.pinned_gbs * 1e9) * 1e3 : 0.0;
    const double floor_tok_s = floor_ms > 0 ? batch / (floor_ms * 1e-3) : 0.0;
    if (bytes > 0) {
      std::printf(
          "  %-6s %-10s b%-2d %8.1f tok/s  step %7.3f ms (GPU %7.3f)  layers %2d/%-2d  "
          "%6.3f GB/step  link %6.1f GB/s = %5.1f%% of pinned H2D  floor %7.3f ms = %8.1f "
          "tok/s\n",
          budget.c_str(), strategy.c_str(), batch, r.tok_s, r.step_ms, r.gpu_ms, s.resident_layers,
          s.streamed_layers, bytes / 1e9, link_gbs, pct, floor_ms, floor_tok_s);
    } else {
      std::printf(
          "  %-6s %-10s b%-2d %8.1f tok/s  step %7.3f ms (GPU %7.3f)  layers %2d/%-2d  nothing "
          "streamed\n",
          budget.c_str(), strategy.c_str(), batch, r.tok_s, r.step_ms, r.gpu_ms, s.resident_layers,
          s.streamed_layers);
    }
    std::printf(
        "RESULT offload budget=%s strategy=%s ring=%d batch=%d tok_s=%.2f step_ms=%.4f "
        "gpu_ms=%.4f resident_layers=%d streamed_layers=%d streamed_bytes=%llu link_gbs=%.2f "
        "pct_pinned=%.1f floor_ms=%.4f floor_tok_s=%.1f gpu_bytes=%llu\n",
        budget.c_str(), strategy.c_str(), c.ring_slots, batch, r.tok_s, r.step_ms, r.gpu_ms,
        s.resident_layers, s.streamed_layers,
        static_cast<unsigned long long>(s.streamed_bytes_per_step), link_gbs, pct, floor_ms,
        floor_tok_s, static_cast<unsigned long long>(s.gpu_bytes));
    std::fflush(stdout);
  }
}

}  // namespace

LinkRates measure_h2d() {
  // 1 GiB: far past any staging buffer or TLB reach, so the median is the
  // link's sustained rate, which is what a streamed layer (233 MB) sees.
  const size_t bytes = size_t{1} << 30;
  void* pinned = nullptr;
  void* dev = nullptr;
  check(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  check(cudaMalloc(&dev, bytes), "malloc");
  std::memset(pinned, 0x5a, bytes);
  LinkRates r;
  const double pinned_ms = median_ms(
      [&] { check(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice), "h2d"); }, 10);
  r.pinned_gbs = bytes / pinned_ms / 1e6;
  check(cudaFreeHost(pinned), "cudaFreeHost");
  {
    // Pageable memory goes through the driver's staging buffers: the rate
    // --pipeline naive pays. Touched first so page faults are not timed.
    std::unique_ptr<char[]> pageable(new char[bytes]);
    std::memset(pageable.get(), 0x5a, bytes);
    const double pageable_ms = median_ms(
        [&] { check(cudaMemcpyAsync(dev, pageable.get(), bytes, cudaMemcpyHostToDevice), "h2d"); },
        5, 1);
    r.pageable_gbs = bytes / pageable_ms / 1e6;
  }
  check(cudaFree(dev), "free");
  std::printf("== host-to-device link (1 GiB, median)\n");
  std::printf("  pinned   (cudaHostAlloc)  %7.1f GB/s\n", r.pinned_gbs);
  std::printf("  pageable (new[])          %7.1f GB/s\n", r.pageable_gbs);
  std::printf("RESULT h2d pinned_gbs=%.2f pageable_gbs=%.2f\n", r.pinned_gbs, r.pageable_gbs);
  std::fflush(stdout);
  return r;
}

int run_offload_bench(const OffloadBenchOptions& opt) {
  if (opt.batches.empty() || opt.steps <= 0) {
    std::fprintf(stderr, "--offload needs at least one batch size and one step\n");
    return 2;
  }
  const LinkRates link = measure_h2d();
  std::vector<Config> configs;
  for (const auto& b : opt.budgets) {
    auto bytes = offload::parse_byte_size(b);
    if (!bytes) {
      std::fprintf(stderr, "--budgets: %s\n", bytes.error().to_string().c_str());
      return 2;
    }
    for (const auto& m : opt.strategies) {
      auto mode = offload::parse_offload_mode(m);
      if (!mode) {
        std::fprintf(stderr, "--strategies: %s\n", mode.error().to_string().c_str());
        return 2;
      }
      if (*mode == offload::OffloadMode::kStream) {
        for (int slots : opt.ring_slots) configs.push_back({b, *bytes, *mode, slots});
      } else {
        configs.push_back({b, *bytes, *mode, 2});
      }
    }
  }
  if (opt.resident_row) configs.push_back({"", 0, offload::OffloadMode::kAuto, 2});

  std::printf("\n== small-VRAM decode: %s, max_context 4096, prompt 512, %d timed steps\n",
              opt.model.c_str(), opt.steps);
  const auto t0 = Clock::now();
  model::LoadOptions lo;
  auto w = model::load_model(opt.model, lo);
  if (!w) {
    std::fprintf(stderr, "load: %s\n", w.error().to_string().c_str());
    return 1;
  }
  std::printf("  weights generated in %.1f s; %.3f GB of INT8 linear weights + scales\n",
              seconds_since(t0), static_cast<double>(w->linear_bytes()) / 1e9);
  std::printf(
      "  columns: budget, strategy, batch, tok/s, wall step (engine GPU median), layers "
      "resident/streamed, bytes streamed per step, achieved link rate and its share of pinned "
      "H2D (target >= 90%%), floor = streamed bytes / pinned H2D rate\n");
  std::fflush(stdout);
  std::mt19937_64 rng(4321);
  for (const auto& c : configs) bench_config(*w, c, link, opt.batches, opt.steps, rng);
  return 0;
}

int run_load_bench(const LoadBenchOptions& opt) {
  engine::EngineOptions o;
  o.backend = engine::Backend::kCuda;
  o.max_batch = 1;
  o.max_context = 1024;
  if (!opt.gpu_memory.empty()) {
    auto bytes = offload::parse_byte_size(opt.gpu_memory);
    if (!bytes) {
      std::fprintf(stderr, "--gpu-memory: %s\n", bytes.error().to_string().c_str());
      return 2;
    }
    o.gpu_memory_bytes = *bytes;
  }
  // A CUDA context before the clock starts: serve creates one for the
  // preflight and the link test anyway, and its ~0.3 s is not loading.
  check(cudaFree(nullptr), "context");
  std::printf("== load_cuda_engine %s%s%s\n", opt.dir.c_str(),
              opt.gpu_memory.empty() ? "" : ", --gpu-memory ", opt.gpu_memory.c_str());
  int rc = 0;
  // The default reader slots first, then larger ones (the previous default
  // was 16 x 32 MiB), to show what pinning them costs.
  struct Slots {
    size_t mib;
    int count;  // 0: threads + 8
  };
  std::vector<Slots> variants = {{4, 0}};
  if (opt.slot_sweep) variants.insert(variants.end(), {{8, 0}, {2, 0}, {32, 16}});
  for (const Slots& v : variants) {
    cuda::CudaTuning tuning;
    tuning.load.slot_bytes = v.mib << 20;
    tuning.load.slots = v.count;
    std::printf("-- reader slots: %zu MiB x %s\n", v.mib,
                v.count ? std::to_string(v.count).c_str() : "(threads + 8)");
    for (int i = 0; i < opt.repeats; ++i) {
      model::LoadOptions lo;
      const auto t0 = Clock::now();
      auto e = cuda::load_cuda_engine(o, opt.dir, lo, tuning);
      const double wall = seconds_since(t0);
      if (!e) {
        std::printf("  load %d failed after %.2f s: %s\n", i + 1, wall,
                    e.error().to_string().c_str());
        std::printf("RESULT load run=%d error=\"%s\"\n", i + 1, e.error().to_string().c_str());
        rc = 1;
        continue;
      }
      const auto& s = stats(**e);
      const double gbs = s.load_seconds > 0 ? s.load_bytes / s.load_seconds / 1e9 : 0.0;
      std::printf(
          "  load %d: %.3f GB in %.3f s = %.1f GB/s (target >= 40 from the page cache) via %s; "
          "wall %.3f s incl. engine set-up; %.2f GB weights on the GPU\n",
          i + 1, s.load_bytes / 1e9, s.load_seconds, gbs,
          s.load_method.empty() ? "(host path)" : s.load_method.c_str(), wall,
          s.weight_bytes / 1e9);
      std::printf(
          "RESULT load run=%d slot_mib=%zu bytes=%llu seconds=%.4f gbs=%.2f method=\"%s\" "
          "wall_s=%.4f\n",
          i + 1, v.mib, static_cast<unsigned long long>(s.load_bytes), s.load_seconds, gbs,
          s.load_method.c_str(), wall);
      std::fflush(stdout);
    }
  }
  return rc;
}

}  // namespace ringserve::bench
