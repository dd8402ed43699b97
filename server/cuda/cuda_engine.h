// The CUDA engine: engine::Engine over the GPU forward passes. All device
// memory (weights, KV pool, workspace) is allocated in create(); decode steps
// replay one captured CUDA graph per batch size; each step's inputs go up in
// one copy from pinned memory and the sampled tokens come back through mapped
// pinned memory, with one synchronisation per pass.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda/checkpoint_stream.h"
#include "engine/engine.h"
#include "engine/engine_options.h"
#include "model/loader.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::cuda {

// Knobs beyond EngineOptions, for benchmarks and tests.
struct CudaTuning {
  enum class PrefillWeights { kAuto, kResident, kDequantPerLayer };
  // kResident keeps an exact bf16 copy of every linear weight (2 bytes a
  // parameter) so prefill GEMMs read it directly; kDequantPerLayer converts
  // each layer's int8 weights into a bf16 workspace before its GEMMs; kAuto
  // picks resident when it fits with room to spare.
  PrefillWeights prefill_weights = PrefillWeights::kAuto;
  int split_tokens = 16;  // decode attention keys per split (the minimum when fused)
  // Fused decode attention (kernels::DecodeAttentionArgs::split_counters):
  // about this many splits per (sequence, kv head), the split length
  // following the context, merged by the last split's block. 0: the previous
  // path (fixed split_tokens, then a combine kernel), kept for comparison.
  int attention_splits = 32;
  // Decode attention on thread block clusters per (sequence, kv head), with
  // RoPE and the KV write fused in (kernels::attention_decode_rope), where
  // the GPU has clusters (compute capability 9.0+): kAutoCluster picks 16 or
  // 8 blocks per batch size (kernels::attention_cluster_blocks); 8 or 16
  // fix it. 0, or an older GPU: rope_kv_write, then the split attention
  // above.
  static constexpr int kAutoCluster = -1;
  int attention_cluster = kAutoCluster;
  // Steps whose longest context exceeds this take the split attention even
  // where clusters are on (one more graph per batch size). No limit by
  // default: on the H200 the cluster kernel was the faster at every context
  // measured, 512 to 16,384 tokens, at batch 1 and 4 (56.7 against 71.4 us
  // a layer at 16,384 and batch 1; 148.5 against 223.7 at batch 4).
  int cluster_attention_max_context = std::numeric_limits<int>::max();
  // Keys a block of the cluster kernel stages at a time: kAutoChunk takes
  // 128 where every cluster of the step stays resident with them and the
  // step fills at most half the SMs, else 64 (kernels::attention_chunk_keys);
  // 64 or 128 fix it (128 only where such clusters fit at all).
  static constexpr int kAutoChunk = 0;
  int attention_chunk = kAutoChunk;
  // Programmatic dependent launch for the decode kernels (compute
  // capability 9.0+, and the overlapping pipelines async and graphs; ignored
  // otherwise): each kernel is launched while the one before it finishes,
  // and a GEMV streams its first weights before waiting for its input,
  // hiding a launch gap and a DRAM latency per kernel. The cluster attention
  // and the GEMV after it are launched normally (see attention_cluster).
  // Measured on the H200 (tests/bench/cuda/engine_bench.cpp reports both):
  // 352 against 343 tok/s at batch 1, 1328 against 1284 at batch 4.
  bool pdl = true;
  // How load_cuda_engine reads a bf16 checkpoint: reader threads and pinned
  // slots (checkpoint_stream.h).
  CheckpointStreamOptions load;
  // Time the decode GEMV shapes at start-up (gemv_tuning.h). Off: every
  // GEMV keeps its default shape, so two engines compute bit for bit the
  // same (tests comparing placements rely on it).
  bool tune_gemv = true;
  // Also offer the tuner the persistent GEMV shapes (GemvConfig::persistent).
  // Off: on the H200 the tuner picked some of them for batch 1 and decode
  // was no faster there (376.9 against 378.3 tok/s) and slower at batch 4
  // (1405.8 against 1431.5), docs/BENCHMARKS.md.
  bool persistent_gemv = false;
  // Also offer the tuner the ring GEMV shapes (GemvConfig::ring_kb: a
  // producer warp streams the weights with TMA bulk copies into shared
  // memory; sm_90, tiled weights on the GPU only). Off: on an H100 they were
  // no faster alone (gate/up 48.8 against 48.2 us, down 30.2 against 26.0)
  // and decode was unchanged with them (321.5 against 322.7 tok/s at batch
  // 1, docs/BENCHMARKS.md); on the H200 398.2 against 400.6 at batch 1
  // and 1561.5 against 1534.0 at batch 4, within what runs repeat to.
  bool ring_gemv = false;
  // The int8 weights in 16x64 tiles (kernels::WeightLayout, applied where
  // the shape allows); off keeps them row-major, as loaded, for comparison.
  // On an H100: 324 against 305 tok/s at batch 1, 1243 against 1158 at
  // batch 4; on the H200 401 against 372 and 1534 against 1425
  // (docs/BENCHMARKS.md).
  bool tiled_weights = true;
  // How a sampled (temperature > 0) row draws its token; both draw the same
  // tokens (kernels::SampleStrategy). kOneBlock: one block a row walks the
  // whole vocabulary, about 1.3 ms a step at 152k tokens with top-k and
  // top-p. kCandidates: a mass histogram and a gather over kHeadSlices
  // blocks a row, then one block sorts at most 4096 tokens; on an H100 a
  // step at T 0.6, top-p 0.95 took 3.15 ms against 4.72 (greedy: 3.09),
  // docs/BENCHMARKS.md. Steps where no row samples take the one-block
  // path under either setting.
  enum class Sampling { kOneBlock, kCandidates };
  Sampling sampling = Sampling::kCandidates;
};

struct CudaEngineStats {
  double upload_seconds = 0.0;
  size_t upload_bytes = 0;
  size_t weight_bytes = 0;  // device bytes of the weights
  bool resident_bf16 = false;
  double last_prefill_gpu_ms = 0.0;  // GPU time of the last prefill pass
  double last_decode_gpu_ms = 0.0;

  // Loading straight from a checkpoint file (load_cuda_engine): bytes read
  // from the file(s), wall time from open to weights ready, the read path.
  uint64_t load_bytes = 0;
  double load_seconds = 0.0;
  std::string load_method;  // "" when the weights came from host memory

  // Small-VRAM mode (EngineOptions::gpu_memory_bytes).
  std::string offload_strategy;  // "stream" or "zerocopy"; "" when every layer is resident
  int resident_layers = 0;
  int streamed_layers = 0;
  uint64_t streamed_bytes_per_step = 0;  // layer bytes crossing PCIe per decode step
  uint64_t host_pinned_bytes = 0;        // weights kept in pinned host memory
  uint64_t gpu_bytes = 0;                // everything the engine allocated on the GPU
  double h2d_gbps = 0.0;       // pinned host-to-device copy rate measured at start-up (0: not)
  double zerocopy_gbps = 0.0;  // mapped-memory kernel read rate measured at start-up (0: not)
  std::vector<std::string> plan_lines;  // the placement plan, as logged
};

class CudaEngineIntrospection {
 public:
  virtual ~CudaEngineIntrospection() = default;
  virtual const CudaEngineStats& stats() const = 0;
  // Logits of row `row` of the last pass (prefill: the row-th sequence of
  // its group; decode: the row-th sequence of the batch), for tests.
  virtual Expected<std::vector<float>> last_logits(int row) const = 0;
};

Expected<std::unique_ptr<engine::Engine>> create_cuda_engine(const engine::EngineOptions& options,
                                                             model::ModelWeights weights);
Expected<std::unique_ptr<engine::Engine>> create_cuda_engine(const engine::EngineOptions& options,
                                                             model::ModelWeights weights,
                                                             const CudaTuning& tuning);

// Builds the engine from a model spec (model/loader.h). A Hugging Face
// checkpoint of float tensors is read straight into pinned buffers
// (io::FileReader: O_DIRECT and io_uring where they work), copied to the GPU
// and quantized there, overlapping the three; anything else (synthetic
// models, ringserve-int8 checkpoints) goes through model::load_model.
Expected<std::unique_ptr<engine::Engine>> load_cuda_engine(const engine::EngineOptions& options,
                                                           const std::string& model_spec,
                                                           const model::LoadOptions& load,
                                                           const CudaTuning& tuning = {});

}  // namespace ringserve::cuda
