// Each hot kernel at the 7B's shapes: GB/s against the measured ceilings
// (GEMV, attention), TFLOP/s for the prefill GEMMs.
#include <cuda_bf16.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "attention.h"
#include "bench.h"
#include "gemm_cublas.h"
#include "gemv_w8a16.h"
#include "model/rope_frequencies.h"
#include "norm.h"
#include "quantize.h"
#include "rope_kv.h"
#include "sampling.h"

namespace ringserve::bench {
namespace {

using kernels::GemvEpilogue;

void* dmalloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

// Random bytes (never zeros) so timings are those of real data.
void fill_random(void* p, size_t bytes, uint64_t seed) {
  std::vector<uint32_t> host((bytes + 3) / 4);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (auto& v : host) v = rng() & 0x3f7f3f7fu;  // finite bf16/fp32 patterns
  check(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice), "fill");
}

struct Shape {
  const char* name;
  int rows, cols;
  GemvEpilogue epi;
};

void gemv_bench(const Ceilings& c, bool quick) {
  const Shape shapes[] = {{"qkv 4608x3584", 4608, 3584, GemvEpilogue::kStoreF32},
                          {"o 3584x3584", 3584, 3584, GemvEpilogue::kResidualAddF32},
                          {"gate_up 37888x3584", 37888, 3584, GemvEpilogue::kSiluMulBf16},
                          {"down 3584x18944", 3584, 18944, GemvEpilogue::kResidualAddF32},
                          {"lm_head 152064x3584", 152064, 3584, GemvEpilogue::kStoreF32}};
  std::printf("\n== W8A16 GEMV (weights rotated over >= 512 MB so L2 never holds them)\n");
  std::printf("  %-22s %5s %-10s %9s %8s %7s %7s   %s\n", "shape", "batch", "best", "us", "GB/s",
              "%copy", "%read", "(reference variant: original kernel, default shape)");
  for (const auto& s : shapes) {
    const size_t wbytes = static_cast<size_t>(s.rows) * s.cols;
    const int copies = static_cast<int>(std::max<size_t>(2, (size_t{512} << 20) / wbytes + 1));
    std::vector<void*> w(copies);
    for (int i = 0; i < copies; ++i) {
      w[i] = dmalloc(wbytes);
      fill_random(w[i], wbytes, i);
    }
    void* scale = dmalloc(4 * s.rows);
    std::vector<float> hs(s.rows, 0.01f);
    check(cudaMemcpy(scale, hs.data(), 4 * s.rows, cudaMemcpyHostToDevice), "scale");
    void* x = dmalloc(2 * 8 * static_cast<size_t>(s.cols));
    fill_random(x, 2 * 8 * static_cast<size_t>(s.cols), 99);
    void* out = dmalloc(4 * 8 * static_cast<size_t>(s.rows));
    check(cudaMemset(out, 0, 4 * 8 * static_cast<size_t>(s.rows)), "memset");
    for (int batch : {1, 4, 8}) {
      kernels::GemvArgs a;
      a.scale = static_cast<float*>(scale);
      a.rows = s.rows;
      a.cols = s.cols;
      a.x = static_cast<__nv_bfloat16*>(x);
      a.batch = batch;
      a.out = out;
      a.epilogue = s.epi;
      const auto def = kernels::default_gemv_config(s.rows, s.cols, s.epi);
      double best_ms = 1e30, def_ms = 0;
      kernels::GemvConfig best{};
      std::string all;
      for (int tiles : {1, 2}) {
        if (s.epi == GemvEpilogue::kSiluMulBf16 && tiles == 1) continue;
        for (int warps : {4, 8, 16}) {
          for (int unroll : {0, 2, 4, 8}) {
            const kernels::GemvConfig cfg{tiles, warps, unroll};
            if (!kernels::gemv_config_valid(cfg)) continue;
            const bool is_def = tiles == def.tiles && warps == def.warps && unroll == def.unroll;
            // --quick: the reference and the grouped variants at its shape.
            if (quick && !(tiles == def.tiles && warps == def.warps)) continue;
            int it = 0;
            const double ms = median_ms(
                [&] {
                  a.w = static_cast<int8_t*>(w[it++ % copies]);
                  if (!kernels::gemv_w8a16(a, cfg, nullptr)) std::exit(1);
                },
                40);
            if (ms < best_ms) {
              best_ms = ms;
              best = cfg;
            }
            if (is_def) def_ms = ms;
            char one[48];
            std::snprintf(one, sizeof one, " t%dw%du%d:%.1f", tiles, warps, unroll, ms * 1e3);
            all += one;
          }
        }
      }
      const double bytes = wbytes + 4.0 * s.rows;
      char cfgs[32];
      std::snprintf(cfgs, sizeof cfgs, "t%dw%du%d", best.tiles, best.warps, best.unroll);
      std::printf(
          "  %-22s %5d %-10s %9.1f %8.0f %6.1f%% %6.1f%%   (t%dw%du%d: %.1f us, %.0f GB/s)\n",
          s.name, batch, cfgs, best_ms * 1e3, bytes / best_ms / 1e6,
          100.0 * bytes / best_ms / 1e6 / c.copy_gbs, 100.0 * bytes / best_ms / 1e6 / c.read_gbs,
          def.tiles, def.warps, def.unroll, def_ms * 1e3, bytes / def_ms / 1e6);
      if (batch == 1) std::printf("    all (us):%s\n", all.c_str());
    }
    for (void* p : w) cudaFree(p);
    cudaFree(scale);
    cudaFree(x);
    cudaFree(out);
  }
}

void attention_bench(const Ceilings& c) {
  const int H = 28, KVH = 4, D = 128, BT = 16;
  for (int ctx : {512, 768, 4096}) {
    std::printf("\n== decode attention (paged, bf16 KV, context %d)\n", ctx);
    // split 16 and 64: fixed splits and a combine kernel; negative: the fused
    // path (context-sized splits of at least 16 keys, about -split of them per
    // (sequence, kv head), merged by the last block; the engine default is
    // CudaTuning::attention_splits = 32).
    for (int split : {16, 64, -64, -32, -16, -8})
      for (int B : {1, 4}) {
        const bool fused = split < 0;
        const int target = -split;
        const int max_blocks = ctx / BT + 1, nblocks = B * max_blocks;
        const size_t cache = static_cast<size_t>(nblocks) * KVH * BT * D;
        void* k = dmalloc(2 * cache);
        void* v = dmalloc(2 * cache);
        fill_random(k, 2 * cache, 1);
        fill_random(v, 2 * cache, 2);
        void* q = dmalloc(2 * B * H * D);
        fill_random(q, 2 * B * H * D, 3);
        std::vector<int32_t> tables(B * max_blocks), lens(B, ctx);
        for (int i = 0; i < B * max_blocks; ++i) tables[i] = i;
        void* dt = dmalloc(4 * tables.size());
        void* dl = dmalloc(4 * B);
        check(cudaMemcpy(dt, tables.data(), 4 * tables.size(), cudaMemcpyHostToDevice), "t");
        check(cudaMemcpy(dl, lens.data(), 4 * B, cudaMemcpyHostToDevice), "l");
        const int max_splits = fused ? kernels::decode_max_splits(4096, 16, target) : 4096 / split;
        void* po = dmalloc(4 * static_cast<size_t>(B) * H * max_splits * D);
        void* pml = dmalloc(4 * static_cast<size_t>(B) * H * max_splits * 2);
        void* out = dmalloc(2 * B * H * D);
        void* counters = dmalloc(4 * B * KVH);
        check(cudaMemset(counters, 0, 4 * B * KVH), "counters");
        kernels::DecodeAttentionArgs a;
        a.q = static_cast<__nv_bfloat16*>(q);
        a.k_cache = static_cast<__nv_bfloat16*>(k);
        a.v_cache = static_cast<__nv_bfloat16*>(v);
        a.block_tables = static_cast<int32_t*>(dt);
        a.max_blocks_per_seq = max_blocks;
        a.context_lens = static_cast<int32_t*>(dl);
        a.batch = B;
        a.num_heads = H;
        a.num_kv_heads = KVH;
        a.head_dim = D;
        a.block_tokens = BT;
        a.split_tokens = fused ? 16 : split;
        a.max_splits = max_splits;
        if (fused) {
          a.split_counters = static_cast<int*>(counters);
          a.target_splits = target;
        }
        a.partial_o = static_cast<float*>(po);
        a.partial_ml = static_cast<float*>(pml);
        a.out = static_cast<__nv_bfloat16*>(out);
        const double ms = median_ms(
            [&] {
              if (!kernels::attention_decode(a, nullptr)) std::exit(1);
            },
            50);
        const double bytes = 2.0 * B * ctx * KVH * D * 2;
        char label[32];
        if (fused)
          std::snprintf(label, sizeof label, "fused ~%d splits", target);
        else
          std::snprintf(label, sizeof label, "split %d + combine", split);
        std::printf(
            "  %-20s batch %d: %.1f us per layer (x28 = %.2f ms per step), %.0f GB/s (%.1f%% of "
            "read)\n",
            label, B, ms * 1e3, ms * 28, bytes / ms / 1e6, 100 * bytes / ms / 1e6 / c.read_gbs);
        for (void* p : {k, v, q, dt, dl, po, pml, out, counters}) cudaFree(p);
      }
  }
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
