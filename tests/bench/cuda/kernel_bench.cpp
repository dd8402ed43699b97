// Each hot kernel at the 7B's shapes: GB/s against the measured ceilings
// (GEMV, attention), TFLOP/s for the prefill GEMMs.
#include <cuda_bf16.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "attention.h"
#include "attention_inputs.h"
#include "bench.h"
#include "gemm_cublas.h"
#include "gemv_inputs.h"
#include "model/rope_frequencies.h"
#include "norm.h"
#include "quantize.h"
#include "rope_kv.h"
#include "sampling.h"

namespace ringserve::bench {
namespace {

using kernels::GemvEpilogue;

void gemv_bench(const Ceilings& c, bool quick) {
  std::vector<GemvShape> shapes(std::begin(kLayerGemvs), std::end(kLayerGemvs));
  shapes.push_back(kHeadGemv);
  std::printf(
      "\n== W8A16 GEMV (weights in 16x64 tiles, rotated over >= 512 MB so L2 never holds them)\n");
  std::printf("  %-22s %5s %-10s %9s %8s %7s %7s   %s\n", "shape", "batch", "best", "us", "GB/s",
              "%copy", "%read", "(reference variant: original kernel, default shape)");
  for (const auto& s : shapes) {
    const size_t wbytes = static_cast<size_t>(s.rows) * s.cols;
    const int copies = static_cast<int>(std::max<size_t>(2, (size_t{512} << 20) / wbytes + 1));
    const GemvInputs in(s, copies);
    for (int batch : {1, 4, 8}) {
      const auto def = kernels::default_gemv_config(s.rows, s.cols, s.epi);
      double best_ms = 1e30, def_ms = 0;
      kernels::GemvConfig best{};
      std::string all;
      auto cfgs_to_try = kernels::gemv_configs(s.epi, true);
      for (const auto& r :
           kernels::gemv_ring_configs_for(s.epi, s.rows, kernels::WeightLayout::kTiled16x64))
        cfgs_to_try.push_back(r);
      for (const kernels::GemvConfig& cfg : cfgs_to_try) {
        const bool at_def = cfg.tiles == def.tiles && cfg.warps == def.warps;
        const bool is_def =
            at_def && cfg.unroll == def.unroll && !cfg.pipelined && cfg.ring_kb == 0;
        // --quick: the reference and the other variants at its shape.
        if (quick && !at_def) continue;
        int it = 0;
        const double ms = median_ms(
            [&] {
              if (!kernels::gemv_w8a16(in.args(it++, batch), cfg, nullptr)) std::exit(1);
            },
            40);
        if (ms < best_ms) {
          best_ms = ms;
          best = cfg;
        }
        if (is_def) def_ms = ms;
        char one[48];
        std::snprintf(one, sizeof one, " %s:%.1f", kernels::describe(cfg).c_str(), ms * 1e3);
        all += one;
      }
      const double bytes = in.bytes_read();
      const std::string cfgs = kernels::describe(best);
      std::printf(
          "  %-22s %5d %-10s %9.1f %8.0f %6.1f%% %6.1f%%   (t%dw%du%d: %.1f us, %.0f GB/s)\n",
          s.name, batch, cfgs.c_str(), best_ms * 1e3, bytes / best_ms / 1e6,
          100.0 * bytes / best_ms / 1e6 / c.copy_gbs, 100.0 * bytes / best_ms / 1e6 / c.read_gbs,
          def.tiles, def.warps, def.unroll, def_ms * 1e3, bytes / def_ms / 1e6);
      if (batch == 1) std::printf("    all (us):%s\n", all.c_str());
    }
  }
}

void attention_bench(const Ceilings& c) {
  using A = AttentionInputs;
  for (int ctx : {512, 768, 4096}) {
    std::printf("\n== decode attention (paged, bf16 KV, context %d)\n", ctx);
    // split 16 and 64: fixed splits and a combine kernel; negative: the fused
    // path (context-sized splits of at least 16 keys, about -split of them per
    // (sequence, kv head), merged by the last block; the engine default is
    // CudaTuning::attention_splits = 32).
    for (int split : {16, 64, -64, -32, -16, -8})
      for (int B : {1, 4}) {
        const AttentionInputs in(B, ctx, split);
        const double ms = median_ms(
            [&] {
              if (!kernels::attention_decode(in.args(), nullptr)) std::exit(1);
            },
            50);
        const double bytes = 2.0 * B * ctx * A::kKvHeads * A::kHeadDim * 2;
        char label[32];
        if (split < 0)
          std::snprintf(label, sizeof label, "fused ~%d splits", -split);
        else
          std::snprintf(label, sizeof label, "split %d + combine", split);
        std::printf(
            "  %-20s batch %d: %.1f us per layer (x28 = %.2f ms per step), %.0f GB/s (%.1f%% of "
            "read)\n",
            label, B, ms * 1e3, ms * 28, bytes / ms / 1e6, 100 * bytes / ms / 1e6 / c.read_gbs);
      }
    // RoPE and attention in one kernel on thread block clusters (the engine's
    // default on sm_90); the split rows above exclude RoPE's launch.
    int device = 0;
    check(cudaGetDevice(&device), "device");
    for (int blocks : {16, 8})
      for (int B : {1, 4}) {
        if (!kernels::attention_decode_rope_supported(device, blocks, A::kHeads, A::kKvHeads,
                                                      A::kHeadDim))
          continue;
        const AttentionInputs in(B, ctx, -32);
        const auto ra = in.fused_args(blocks);
        const double ms = median_ms(
            [&] {
              if (!kernels::attention_decode_rope(ra, nullptr)) std::exit(1);
            },
            50);
        const double bytes = 2.0 * B * ctx * A::kKvHeads * A::kHeadDim * 2;
        char label[40];
        std::snprintf(label, sizeof label, "rope+attn, cluster %d", blocks);
        std::printf(
            "  %-20s batch %d: %.1f us per layer (x28 = %.2f ms per step), %.0f GB/s (%.1f%% of "
            "read)\n",
            label, B, ms * 1e3, ms * 28, bytes / ms / 1e6, 100 * bytes / ms / 1e6 / c.read_gbs);
      }
  }
}

// The engine's sampler (kernels::sample_tokens_from_halves, the lo half
// zero so the in-place sum leaves the logits as they are) at settings users
// pick, with each strategy, on two shapes of logits: fill_random's (flat:
// every token within a factor ~7 of the most likely at T = 1) and peaked (a
// N(0, 2) bulk under eight tokens 18-22 logits higher, as a confident
// language model's).
void sampler_bench(int B) {
  const int V = 152064;
  const size_t n = static_cast<size_t>(B) * V;
  void* halves = dmalloc(4 * 2 * n);
  void* scratch = dmalloc(4 * n);
  void* rows = dmalloc(sizeof(kernels::SamplingRowScratch) * B);
  void* slots = dmalloc(sizeof(kernels::SamplingSlot) * B);
  void* res = dmalloc(sizeof(kernels::SampleResult) * B);
  check(cudaMemset(static_cast<float*>(halves) + n, 0, 4 * n), "lo half");
  std::vector<float> peaked(n);
  std::mt19937_64 rng(11);
  std::normal_distribution<float> bulk(0.0f, 2.0f);
  for (auto& x : peaked) x = bulk(rng);
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < 8; ++j)
      peaked[static_cast<size_t>(b) * V + rng() % V] = 18.0f + 0.5f * static_cast<float>(j);
  struct Setting {
    const char* name;
    float temperature, top_p;
    int top_k;
  };
  const Setting settings[] = {{"greedy", 0.0f, 1.0f, 0},
                              {"T 0.7, top-k 40, top-p 0.9", 0.7f, 0.9f, 40},
                              {"T 0.6, top-p 0.95", 0.6f, 0.95f, 0},
                              {"T 1.0", 1.0f, 1.0f, 0}};
  for (const bool flat : {true, false}) {
    if (flat)
      fill_random(halves, 4 * n, 5);
    else
      check(cudaMemcpy(halves, peaked.data(), 4 * n, cudaMemcpyHostToDevice), "peaked");
    for (const Setting& st : settings) {
      std::vector<kernels::SamplingSlot> hs(B);
      for (int b = 0; b < B; ++b) {
        hs[b].temperature = st.temperature;
        hs[b].top_p = st.top_p;
        hs[b].top_k = st.top_k;
        hs[b].seed = 1 + b;
      }
      check(cudaMemcpy(slots, hs.data(), sizeof(kernels::SamplingSlot) * B, cudaMemcpyHostToDevice),
            "slots");
      double us[2];
      for (const auto strategy :
           {kernels::SampleStrategy::kOneBlock, kernels::SampleStrategy::kCandidates}) {
        us[strategy == kernels::SampleStrategy::kCandidates] =
            1e3 *
            median_ms(
                [&] {
                  if (!kernels::sample_tokens_from_halves(
                          static_cast<float*>(halves), B, V,
                          static_cast<kernels::SamplingSlot*>(slots), static_cast<float*>(scratch),
                          static_cast<kernels::SamplingRowScratch*>(rows),
                          static_cast<kernels::SampleResult*>(res), strategy, nullptr))
                    std::exit(1);
                },
                50);
      }
      std::printf(
          "  sampler batch %d, %-6s logits, %-27s one block %7.1f us, candidates %6.1f us\n", B,
          flat ? "flat" : "peaked", st.name, us[0], us[1]);
    }
  }
  for (void* p : {halves, scratch, rows, slots, res}) cudaFree(p);
}

void misc_bench(const Ceilings& c) {
  std::printf("\n== other decode kernels\n");
  const int V = 152064, H = 3584;
  for (int B : {1, 4}) {
    void* logits = dmalloc(4 * static_cast<size_t>(B) * V);
    fill_random(logits, 4 * static_cast<size_t>(B) * V, 5);
    void* scratch = dmalloc(4 * static_cast<size_t>(B) * V);
    void* slots = dmalloc(sizeof(kernels::SamplingSlot) * B);
    void* res = dmalloc(sizeof(kernels::SampleResult) * B);
    std::vector<kernels::SamplingSlot> hs(B);
    check(cudaMemcpy(slots, hs.data(), sizeof(kernels::SamplingSlot) * B, cudaMemcpyHostToDevice),
          "s");
    auto run = [&] {
      if (!kernels::sample_tokens(
              static_cast<float*>(logits), V, B, V, static_cast<kernels::SamplingSlot*>(slots),
              static_cast<float*>(scratch), static_cast<kernels::SampleResult*>(res), nullptr))
        std::exit(1);
    };
    const double greedy = median_ms(run, 50);
    for (auto& s : hs) {
      s.temperature = 0.7f;
      s.top_p = 0.9f;
      s.top_k = 40;
    }
    check(cudaMemcpy(slots, hs.data(), sizeof(kernels::SamplingSlot) * B, cudaMemcpyHostToDevice),
          "s");
    const double topkp = median_ms(run, 50);
    std::printf("  sampling batch %d over %d: greedy %.1f us, temperature+top-k+top-p %.1f us\n", B,
                V, greedy * 1e3, topkp * 1e3);
    for (void* p : {logits, scratch, slots, res}) cudaFree(p);
  }
  for (int B : {1, 4}) sampler_bench(B);
  void* x = dmalloc(4 * 4 * H);
  void* w = dmalloc(4 * H);
  void* y = dmalloc(2 * 4 * H);
  fill_random(x, 4 * 4 * H, 1);
  fill_random(w, 4 * H, 2);
  for (int rows : {1, 4}) {
    const double ms = median_ms(
        [&] {
          if (!kernels::rmsnorm_f32_to_bf16(static_cast<float*>(x), static_cast<float*>(w),
                                            static_cast<__nv_bfloat16*>(y), rows, H, 1e-6f, nullptr,
                                            nullptr))
            std::exit(1);
        },
        50);
    std::printf("  rmsnorm %dx%d: %.1f us (launch-bound; 57 per step)\n", rows, H, ms * 1e3);
  }
  for (void* p : {x, w, y}) cudaFree(p);

  // RoPE + KV write at the 7B's heads, one token (decode at batch 1), with the
  // engine's precomputed frequency table and without it.
  {
    const int NH = 28, KVH = 4, D = 128, BT = 16, width = (NH + 2 * KVH) * D;
    void* qkv = dmalloc(4 * width);
    fill_random(qkv, 4 * width, 3);
    const std::vector<int32_t> pos = {100000}, slot = {5};
    void* dpos = dmalloc(4);
    void* dslot = dmalloc(4);
    check(cudaMemcpy(dpos, pos.data(), 4, cudaMemcpyHostToDevice), "pos");
    check(cudaMemcpy(dslot, slot.data(), 4, cudaMemcpyHostToDevice), "slot");
    const auto freq = model::rope_inv_freq(D, 1000000.0);
    void* dfreq = dmalloc(4 * freq.size());
    check(cudaMemcpy(dfreq, freq.data(), 4 * freq.size(), cudaMemcpyHostToDevice), "freq");
    void* qo = dmalloc(2 * NH * D);
    void* kc = dmalloc(2 * 2 * KVH * BT * D);
    void* vc = dmalloc(2 * 2 * KVH * BT * D);
    for (bool table : {true, false}) {
      kernels::RopeKvArgs r;
      r.ntok = 1;
      r.num_heads = NH;
      r.num_kv_heads = KVH;
      r.head_dim = D;
      r.rope_theta = 1000000.0f;
      r.inv_freq = table ? static_cast<float*>(dfreq) : nullptr;
      r.positions = static_cast<int32_t*>(dpos);
      r.slots = static_cast<int32_t*>(dslot);
      r.block_tokens = BT;
      r.q_out = static_cast<__nv_bfloat16*>(qo);
      r.k_cache = static_cast<__nv_bfloat16*>(kc);
      r.v_cache = static_cast<__nv_bfloat16*>(vc);
      const double ms = median_ms(
          [&] {
            if (!kernels::rope_kv_write(static_cast<float*>(qkv), width, r, nullptr)) std::exit(1);
          },
          50);
      std::printf("  rope_kv 1 token at position 100000%s: %.1f us (28 per step)\n",
                  table ? "" : " (no frequency table)", ms * 1e3);
    }
    for (void* p : {qkv, dpos, dslot, dfreq, qo, kc, vc}) cudaFree(p);
  }
  (void)c;
}

void prefill_gemm_bench(const Ceilings& c) {
  std::printf("\n== prefill GEMMs (cuBLAS bf16, fp32 accumulate), 512 tokens\n");
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) std::exit(1);
  const int M = 512;
  struct G {
    const char* name;
    int N, K;
  } gs[] = {
      {"qkv", 4608, 3584}, {"o", 3584, 3584}, {"gate_up", 37888, 3584}, {"down", 3584, 18944}};
  double total_ms = 0, total_flop = 0, deq_ms = 0;
  void* a = dmalloc(2 * static_cast<size_t>(M) * 18944);
  fill_random(a, 2 * static_cast<size_t>(M) * 18944, 7);
  void* out = dmalloc(2 * static_cast<size_t>(M) * 37888);
  for (const auto& g : gs) {
    const size_t n = static_cast<size_t>(g.N) * g.K;
    void* w8 = dmalloc(n);
    fill_random(w8, n, 8);
    void* w = dmalloc(2 * n);
    const double dq = median_ms(
        [&] {
          if (!kernels::int8_to_bf16(static_cast<int8_t*>(w8), static_cast<__nv_bfloat16*>(w), n,
                                     nullptr))
            std::exit(1);
        },
        20);
    const double ms = median_ms(
        [&] {
          if (!kernels::gemm_bf16_nt(h, M, g.N, g.K, static_cast<__nv_bfloat16*>(a), g.K,
                                     static_cast<__nv_bfloat16*>(w), g.K, out, CUDA_R_16BF, g.N,
                                     nullptr))
            std::exit(1);
        },
        20);
    const double flop = 2.0 * M * g.N * g.K;
    std::printf("  %-8s %5dx%5d: GEMM %7.1f us %6.0f TFLOP/s | int8->bf16 %6.1f us %5.0f GB/s\n",
                g.name, g.N, g.K, ms * 1e3, flop / ms / 1e9, dq * 1e3, 3.0 * n / dq / 1e6);
    total_ms += ms;
    total_flop += flop;
    deq_ms += dq;
    cudaFree(w8);
    cudaFree(w);
  }
  std::printf(
      "  per layer: GEMMs %.3f ms, dequant %.3f ms -> x28: %.2f ms GEMMs, %.2f ms dequant\n",
      total_ms, deq_ms, 28 * total_ms, 28 * deq_ms);
  std::printf("  (%.0f TFLOP/s average over the linear layers)\n", total_flop / total_ms / 1e9);
  cudaFree(a);
  cudaFree(out);
  cublasDestroy(h);
  (void)c;
}

}  // namespace

void run_kernel_bench(const Ceilings& c, bool quick) {
  gemv_bench(c, quick);
  attention_bench(c);
  misc_bench(c);
  prefill_gemm_bench(c);
}

}  // namespace ringserve::bench
