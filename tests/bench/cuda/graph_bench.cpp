// What each decode kernel costs inside a CUDA graph, where the engine runs
// it: kernels captured back to back and replayed, so neither the launch
// latency nor the events around a lone launch (several microseconds, which
// kernel_bench's per-launch numbers include) are counted. Then the decode
// step's GEMVs alone (28 layers of distinct weights and the head) as one
// graph: the floor the step's other kernels are added to. Next to each, a
// plain read-only pass over the same bytes, one kernel per matrix: what a
// GEMV launched per matrix could reach at best, so the part of the gap to the
// roofline that no GEMV kernel of this launch structure can close. The
// shapes are timed on tiled weights (the engine's layout); the batch-1 shape
// also on row-major ones. And the GEMV's loads without its arithmetic,
// row-major and tiled: what the access pattern alone costs.
#include <cuda_bf16.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "attention_inputs.h"
#include "bandwidth.h"
#include "bench.h"
#include "gemv_inputs.h"
#include "model/rope_frequencies.h"
#include "norm.h"
#include "rope_kv.h"
#include "sampling.h"

namespace ringserve::bench {
namespace {

using kernels::GemvArgs;
using kernels::GemvConfig;
using kernels::GemvEpilogue;

constexpr int kLayers = 28;

// A GEMV family's inputs (one weight copy per layer) and its fastest launch
// shapes inside a graph.
struct Family {
  explicit Family(const GemvShape& s, int copies) : in(s, copies) {}
  GemvInputs in;
  GemvConfig best{};
  double best_us[2] = {0, 0};  // batch 1, 4
  double read_us = 0;          // the read-only pass over the same bytes
};

void read_pass(const Family& f, int copy, uint32_t* sink, cudaStream_t s) {
  check(launch_read(f.in.weights(copy), f.in.weight_bytes(), sink, s), "read pass");
}

void run(const Family& f, int copy, int batch, const GemvConfig& cfg, cudaStream_t s,
         bool tiled = true) {
  if (!kernels::gemv_w8a16(f.in.args(copy, batch, tiled), cfg, s)) std::exit(1);
}

// Every launch shape of one family, in a graph of `reps` launches over
// distinct weight copies; picks the fastest per batch.
void time_family(Family& f, const Ceilings& c, uint32_t* sink) {
  const GemvShape& shape = f.in.shape();
  const double bytes = f.in.bytes_read();
  const int reps = f.in.copies();
  std::printf("  %-8s %6dx%-6d", shape.name, shape.rows, shape.cols);
  for (int bi = 0; bi < 2; ++bi) {
    const int batch = bi == 0 ? 1 : 4;
    double best = 1e30, best_plain = 1e30, best_ring = 1e30;
    GemvConfig best_cfg{}, ring_cfg{};
    auto cfgs = kernels::gemv_configs(shape.epi, true);
    for (const auto& r :
         kernels::gemv_ring_configs_for(shape.epi, shape.rows, kernels::WeightLayout::kTiled16x64))
      cfgs.push_back(r);
    for (const GemvConfig& cfg : cfgs) {
      int i = 0;
      const double ms = graph_ms([&](cudaStream_t s) { run(f, i++, batch, cfg, s); }, reps);
      if (ms < best) {
        best = ms;
        best_cfg = cfg;
      }
      if (cfg.ring_kb == 0 && ms < best_plain) {
        best_plain = ms;
        if (bi == 0) f.best = cfg;  // the row-major comparison below needs a non-ring shape
      }
      if (cfg.ring_kb > 0 && ms < best_ring) {
        best_ring = ms;
        ring_cfg = cfg;
      }
    }
    f.best_us[bi] = best * 1e3;
    std::printf(" | b%d %-7s %6.1f us %5.0f GB/s %5.1f%%", batch,
                kernels::describe(best_cfg).c_str(), best * 1e3, bytes / best / 1e6,
                100 * bytes / best / 1e6 / c.copy_gbs);
    if (best_ring < 1e30)
      std::printf(" (ring %s %.1f us)", kernels::describe(ring_cfg).c_str(), best_ring * 1e3);
  }
  // The fastest batch-1 shape that can read row-major (not the ring kernel)
  // on the same bytes read row-major: what the tiles gain.
  int j = 0;
  const double row_major_us =
      1e3 * graph_ms([&](cudaStream_t s) { run(f, j++, 1, f.best, s, false); }, reps);
  std::printf(" | b1 row-major %6.1f us", row_major_us);
  int i = 0;
  f.read_us = 1e3 * graph_ms([&](cudaStream_t s) { read_pass(f, i++, sink, s); }, reps);
  std::printf(" | read-only pass %6.1f us %5.1f%%", f.read_us,
              100 * f.in.weight_bytes() / f.read_us / 1e3 / c.copy_gbs);
  // The GEMV's loads alone (8 warps, 4 chunks in flight each): in its
  // row-major pattern, as if the matrix were stored in 1 KB tiles, and with
  // 3 blocks per SM walking the tiles as a persistent kernel would. Whether
  // the layout or the one-block-per-tile structure, rather than the
  // arithmetic, keeps the GEMV from the plain pass.
  struct Probe {
    const char* name;
    bool tiled;
    int blocks_per_sm;
  };
  for (const Probe& p :
       {Probe{"GEMV loads", false, 0}, Probe{"tiled", true, 0}, Probe{"persistent", false, 3}}) {
    int k = 0;
    const double us =
        1e3 * graph_ms(
                  [&](cudaStream_t s) {
                    check(launch_read_gemv_pattern(static_cast<const int8_t*>(f.in.weights(k++)),
                                                   shape.rows, shape.cols, p.tiled, p.blocks_per_sm,
                                                   sink, s),
                          "GEMV-pattern read");
                  },
                  reps);
    std::printf(" | %s %6.1f us", p.name, us);
  }
  std::printf("\n");
}

void gemv_in_graph(const Ceilings& c) {
  std::printf("\n== decode GEMVs inside a graph (%d distinct weight copies per shape)\n", kLayers);
  std::vector<std::unique_ptr<Family>> fams;
  for (const auto& s : kLayerGemvs) fams.push_back(std::make_unique<Family>(s, kLayers));
  Family head(kHeadGemv, 4);
  auto* sink = static_cast<uint32_t*>(dmalloc(sizeof(uint32_t)));
  for (auto& f : fams) time_family(*f, c, sink);
  time_family(head, c, sink);

  // The step's GEMVs alone, layer after layer, as the engine orders them.
  double bytes = 0;
  for (const auto& f : fams) bytes += kLayers * f->in.bytes_read();
  bytes += head.in.bytes_read();
  for (int batch : {1, 4}) {
    const double ms = graph_ms(
        [&](cudaStream_t s) {
          for (int l = 0; l < kLayers; ++l)
            for (const auto& f : fams) run(*f, l, batch, f->best, s);
          run(head, 0, batch == 1 ? 2 : 2 * batch, head.best, s);
        },
        1, 10);
    double sum_us = 0;
    for (const auto& f : fams) sum_us += kLayers * f->best_us[batch == 1 ? 0 : 1];
    std::printf(
        "  GEMVs of one decode step, batch %d: %.3f ms (%.0f GB/s, %.1f%% of copy; "
        "bytes/copy = %.3f ms; sum of the per-shape times %.3f ms + head)\n",
        batch, ms, bytes / ms / 1e6, 100 * bytes / ms / 1e6 / c.copy_gbs, bytes / c.copy_gbs / 1e6,
        sum_us / 1e3);
  }
  // The same matrices in the same order, each read by one plain pass.
  double wbytes = head.in.weight_bytes();
  for (const auto& f : fams) wbytes += kLayers * static_cast<double>(f->in.weight_bytes());
  const double read_ms = graph_ms(
      [&](cudaStream_t s) {
        for (int l = 0; l < kLayers; ++l)
          for (const auto& f : fams) read_pass(*f, l, sink, s);
        read_pass(head, 0, sink, s);
      },
      1, 10);
  std::printf(
      "  the same %d matrices, one read-only pass each: %.3f ms (%.1f%% of copy): the floor of "
      "one kernel per matrix\n",
      kLayers * static_cast<int>(fams.size()) + 1, read_ms,
      100 * wbytes / read_ms / 1e6 / c.copy_gbs);
  cudaFree(sink);
}

void small_kernels_in_graph() {
  std::printf("\n== other decode kernels inside a graph (28 back to back, per call)\n");
  const int H = 3584;
  void* x = dmalloc(4 * 8 * H);
  void* w = dmalloc(4 * H);
  void* y = dmalloc(2 * 8 * H);
  fill_random(x, 4 * 8 * H, 1);
  fill_random(w, 4 * H, 2);
  for (int rows : {1, 4}) {
    const double ms = graph_ms(
        [&](cudaStream_t s) {
          if (!kernels::rmsnorm_f32_to_bf16(static_cast<float*>(x), static_cast<float*>(w),
                                            static_cast<__nv_bfloat16*>(y), rows, H, 1e-6f, nullptr,
                                            s))
            std::exit(1);
        },
        kLayers);
    std::printf("  rmsnorm %dx%d: %.2f us\n", rows, H, ms * 1e3);
  }
  for (void* p : {x, w, y}) cudaFree(p);

  // After the head: the greedy token and its log-probability from the
  // vocabulary's logits, by the one block per row that samples (two passes)
  // and as the engine runs it, from the head's two halves with the passes
  // spread over kernels::kHeadSlices blocks a row.
  const int V = 152064;
  for (int B : {1, 4}) {
    void* logits = dmalloc(4 * 2 * static_cast<size_t>(B) * V);
    fill_random(logits, 4 * 2 * static_cast<size_t>(B) * V, 3);
    void* scratch = dmalloc(4 * static_cast<size_t>(B) * V);
    void* rows = dmalloc(sizeof(kernels::SamplingRowScratch) * B);
    void* results = dmalloc(sizeof(kernels::SampleResult) * B);
    const std::vector<kernels::SamplingSlot> greedy(B);
    void* slots = dmalloc(sizeof(kernels::SamplingSlot) * B);
    check(
        cudaMemcpy(slots, greedy.data(), sizeof(kernels::SamplingSlot) * B, cudaMemcpyHostToDevice),
        "slots");
    auto* l = static_cast<float*>(logits);
    auto* sl = static_cast<const kernels::SamplingSlot*>(slots);
    auto* sc = static_cast<float*>(scratch);
    auto* out = static_cast<kernels::SampleResult*>(results);
    const double one_ms = graph_ms(
        [&](cudaStream_t s) {
          if (!kernels::sample_tokens(l, V, B, V, sl, sc, out, s)) std::exit(1);
        },
        kLayers);
    auto halves_ms = [&](kernels::SampleStrategy strategy) {
      return graph_ms(
          [&](cudaStream_t s) {
            if (!kernels::sample_tokens_from_halves(l, B, V, sl, sc,
                                                    static_cast<kernels::SamplingRowScratch*>(rows),
                                                    out, strategy, s))
              std::exit(1);
          },
          kLayers);
    };
    // The candidates strategy adds two launches that greedy rows leave at
    // once (the engine launches them only in steps where some row samples).
    const double halves_one = halves_ms(kernels::SampleStrategy::kOneBlock);
    const double halves_cand = halves_ms(kernels::SampleStrategy::kCandidates);
    std::printf(
        "  greedy token of %d x %d logits: one block a row %.2f us; from the two halves, %d "
        "slices a row %.2f us (%.2f us with the candidates strategy's launches)\n",
        B, V, one_ms * 1e3, kernels::kHeadSlices, halves_one * 1e3, halves_cand * 1e3);
    for (void* p : {logits, scratch, rows, results, slots}) cudaFree(p);
  }
}

}  // namespace

void run_graph_bench(const Ceilings& c) {
  gemv_in_graph(c);
  small_kernels_in_graph();
  run_attention_graph_bench();
}

// Decode attention at growing contexts, each of the 28 launches over its own
// KV cache, as the engine's layers are (one cache would sit in L2 from the
// second launch on at the shorter contexts).
void run_attention_graph_bench() {
  std::printf("\n== decode attention inside a graph (28 back to back, each over its own KV)\n");
  using A = AttentionInputs;
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "device");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "sms");
  // Clusters of 128-key chunks the GPU holds at once, for clusters of 16 and
  // 8 (0: they do not fit); the same at every context and batch.
  const int resident16 = kernels::attention_decode_rope_resident_clusters(
      device, 16, 128, A::kHeads, A::kKvHeads, A::kHeadDim);
  const int resident8 = kernels::attention_decode_rope_resident_clusters(device, 8, 128, A::kHeads,
                                                                         A::kKvHeads, A::kHeadDim);
  for (int ctx : {512, 768, 4096, 16384}) {
    for (int B : {1, 4}) {
      // -32: the split path's default splits.
      std::vector<std::unique_ptr<AttentionInputs>> layers;
      for (int i = 0; i < kLayers; ++i)
        layers.push_back(std::make_unique<AttentionInputs>(B, ctx, -32));
      // graph_ms captures kLayers calls: call i runs over layers[i].
      auto each_layer = [&](const std::function<void(const AttentionInputs&, cudaStream_t)>& fn) {
        int i = 0;
        return graph_ms([&](cudaStream_t s) { fn(*layers[i++ % kLayers], s); }, kLayers);
      };
      auto rope = [](const AttentionInputs& in, cudaStream_t s) {
        if (!kernels::rope_kv_write(in.qkv(), A::kQkvWidth, in.rope_args(), s)) std::exit(1);
      };
      auto attend = [](const AttentionInputs& in, cudaStream_t s) {
        if (!kernels::attention_decode(in.args(), s)) std::exit(1);
      };
      const double rope_ms = each_layer(rope);
      const double attn_ms = each_layer(attend);
      const double both_ms = each_layer([&](const AttentionInputs& in, cudaStream_t s) {
        rope(in, s);
        attend(in, s);
      });
      std::printf(
          "  context %d, batch %d: rope_kv %.2f us, attention %.2f us, the two in sequence "
          "%.2f us (x28 = %.3f ms per step)\n",
          ctx, B, rope_ms * 1e3, attn_ms * 1e3, both_ms * 1e3, both_ms * kLayers);
      // The engine's default on sm_90: both in one kernel on clusters, with
      // the chunk sizes that fit; "*" marks the chunk the engine takes for
      // this cluster size and batch (kernels::attention_chunk_keys).
      for (int blocks : {16, 8}) {
        if (!kernels::attention_decode_rope_supported(device, blocks, A::kHeads, A::kKvHeads,
                                                      A::kHeadDim))
          continue;
        const int resident = blocks == 16 ? resident16 : resident8;
        for (int chunk : {64, 128}) {
          if (chunk == 128 && resident == 0) continue;
          const double fused_ms = each_layer([&](const AttentionInputs& in, cudaStream_t s) {
            if (!kernels::attention_decode_rope(in.fused_args(blocks, chunk), s)) std::exit(1);
          });
          const bool chosen =
              kernels::attention_chunk_keys(B * A::kKvHeads, blocks, sms, resident) == chunk;
          std::printf(
              "  context %d, batch %d: RoPE + attention fused, clusters of %d, %d-key chunks%s: "
              "%.2f us (x28 = %.3f ms per step)\n",
              ctx, B, blocks, chunk, chosen ? "*" : "", fused_ms * 1e3, fused_ms * kLayers);
        }
      }
    }
  }
}

}  // namespace ringserve::bench
