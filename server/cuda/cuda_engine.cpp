#include "cuda/cuda_engine.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_set>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "attention.h"
#include "cuda/checkpoint_loader.h"
#include "cuda/device_model.h"
#include "cuda/forward.h"
#include "cuda/gemv_tuning.h"
#include "cuda/kv_blocks.h"
#include "cuda/layer_streamer.h"
#include "cuda/link_probe.h"
#include "cuda/workspace.h"
#include "cuda_check.h"
#include "offload/auto_choice.h"
#include "offload/footprint.h"
#include "offload/plan.h"
#include "util/log.h"

namespace ringserve::cuda {
namespace {

using engine::SampledToken;
using engine::SeqId;
using engine::SequenceSpec;
using engine::StepResult;

// Context used when neither the options nor a small model bound it: the
// prefill attention workspace grows with its square.
constexpr int kDefaultMaxContext = 4096;
// Prefill score buffers are capped at this many bytes; heads are processed
// in groups that fit.
constexpr size_t kScoreBudget = 512u << 20;

// The ablation's copy-sync-compute steps: no overlap of any kind there.
bool synchronous(engine::Pipeline p) {
  return p == engine::Pipeline::kNaive || p == engine::Pipeline::kPinned;
}

// Host buffers the engine copies from: pageable only in the naive pipeline.
HostMemory host_memory_for(engine::Pipeline p) {
  return p == engine::Pipeline::kNaive ? HostMemory::kPageable : HostMemory::kPinnedMapped;
}

class CudaEngine final : public engine::Engine, public CudaEngineIntrospection {
 public:
  ~CudaEngine() override {
    for (auto& g : graphs_)
      if (g) cudaGraphExecDestroy(g);
    if (cublas_) cublasDestroy(cublas_);
    for (auto e : {ev_start_, ev_stop_})
      if (e) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
  }

  // Builds the model on the GPU once the placement is known.
  using ModelMaker = std::function<Expected<DeviceModel>(
      bool resident_bf16, const WeightPlacement& placement, cudaStream_t stream)>;
  static Expected<std::unique_ptr<CudaEngine>> create(const engine::EngineOptions& options,
                                                      const model::ModelConfig& config,
                                                      const ModelMaker& make_model,
                                                      const CudaTuning& tuning);

  const engine::EngineInfo& info() const override { return info_; }
  const CudaEngineStats& stats() const override { return stats_; }
  void set_upload(const UploadStats& up) {
    stats_.upload_seconds = up.seconds;
    stats_.upload_bytes = up.bytes;
  }
  void set_load(const CheckpointLoadStats& st) {
    stats_.load_bytes = st.bytes;
    stats_.load_seconds = st.seconds;
    stats_.load_method = st.method;
  }
  Expected<std::vector<float>> last_logits(int row) const override {
    if (row < 0 || row >= limits_.max_batch)
      return make_error(Errc::kInvalidArgument, "row {} out of range", row);
    std::vector<float> out(info_.vocab_size);
    CUDA_CHECK(cudaMemcpy(out.data(), ws_->logits + static_cast<size_t>(row) * info_.vocab_size,
                          out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }

  bool fits_ever(int prompt_tokens, int max_new_tokens) const override {
    if (prompt_tokens <= 0 || max_new_tokens < 0) return false;
    if (static_cast<int64_t>(prompt_tokens) + max_new_tokens > info_.max_context) return false;
    if (prompt_tokens > limits_.max_prefill_tokens) return false;
    return blocks_needed(prompt_tokens, max_new_tokens) <= blocks_.total();
  }
  bool fits_now(int prompt_tokens, int max_new_tokens) const override {
    return fits_ever(prompt_tokens, max_new_tokens) &&
           seqs_.size() < static_cast<size_t>(limits_.max_batch) &&
           blocks_needed(prompt_tokens, max_new_tokens) <= blocks_.free();
  }

  Status add(const SequenceSpec& spec) override;
  Expected<StepResult> step() override;
  void release(SeqId id) override;
  size_t active_sequences() const override { return seqs_.size(); }
  engine::KvUsage kv_usage() const override {
    return {blocks_.total(), blocks_.total() - blocks_.free(), limits_.block_tokens};
  }

 private:
  struct Sequence {
    SequenceSpec spec;
    std::vector<int32_t> blocks;
    int cached = 0;  // positions in the KV cache
    int32_t next_token = -1;
    uint64_t generated = 0;
    bool prefilled = false;
  };

  int64_t blocks_needed(int prompt_tokens, int max_new_tokens) const {
    const int64_t tokens = static_cast<int64_t>(prompt_tokens) + std::max(max_new_tokens, 1);
    return (tokens + limits_.block_tokens - 1) / limits_.block_tokens;
  }
  int32_t slot_of(const Sequence& s, int pos) const {
    return s.blocks[pos / limits_.block_tokens] * limits_.block_tokens + pos % limits_.block_tokens;
  }
  void fill_sampling(kernels::SamplingSlot& slot, const Sequence& s) const {
    slot.temperature = s.spec.sampling.temperature;
    slot.top_p = s.spec.sampling.top_p;
    slot.top_k = s.spec.sampling.top_k;
    slot.top_logprobs = std::clamp(s.spec.sampling.top_logprobs, 0, kernels::kMaxTopLogprobs);
    slot.seed = s.spec.sampling.seed;
    slot.counter = s.generated;
  }
  SampledToken collect(Sequence& s, int row, bool from_prefill);
  Status run_prefill(std::vector<Sequence*>& group, StepResult& result);
  Status run_decode(std::vector<Sequence*>& batch, StepResult& result);
  // The decode graph of this batch size, attention and sampler, captured on
  // first use.
  Expected<cudaGraphExec_t> decode_graph(int batch, DecodeAttention attention,
                                         kernels::SampleStrategy sampling);
  // Uploads the step's metadata: one async copy (a graph node under
  // graphs), or copy-then-sync for the naive and pinned pipelines.
  Status upload_meta();
  // Makes the sampled results readable by the host after the pass.
  Status fetch_results();
  // The second half of create(), once the weights are placed: the
  // streamer, workspace, GEMV tuning, KV pool and forward pass.
  static Expected<std::unique_ptr<CudaEngine>> finish_create(std::unique_ptr<CudaEngine> e,
                                                             LayerStreamer::Mode stream_mode);

  engine::EngineOptions options_;
  CudaTuning tuning_;
  engine::EngineInfo info_;
  Limits limits_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaEvent_t ev_start_ = nullptr, ev_stop_ = nullptr;
  std::unique_ptr<DeviceModel> model_;
  std::unique_ptr<Workspace> ws_;
  KvPool kv_;
  KvBlocks blocks_;
  LayerStreamer streamer_;
  std::unique_ptr<Forward> forward_;
  // [batch * 2 + attention], captured on first use.
  std::vector<cudaGraphExec_t> graphs_;
  std::vector<Sequence> seqs_;  // admission order
  CudaEngineStats stats_;
};

Expected<std::unique_ptr<CudaEngine>> CudaEngine::create(const engine::EngineOptions& options,
                                                         const model::ModelConfig& c,
                                                         const ModelMaker& make_model,
                                                         const CudaTuning& tuning) {
  auto log = log::get("engine");
  RS_TRY_STATUS(c.validate());
  if (options.max_batch <= 0 || options.block_tokens <= 0)
    return make_error(Errc::kInvalidArgument, "max_batch and block_tokens must be positive");
  if (c.num_heads / c.num_kv_heads > kernels::kAttentionMaxGroup || c.head_dim % 8 != 0 ||
      c.head_dim > kernels::kAttentionMaxHeadDim)
    return make_error(Errc::kUnsupported, "attention shape H={} KVH={} D={} is not supported",
                      c.num_heads, c.num_kv_heads, c.head_dim);
  if (tuning.split_tokens <= 0 || tuning.split_tokens > kernels::kAttentionMaxSplitTokens)
    return make_error(Errc::kInvalidArgument, "split_tokens {} out of range", tuning.split_tokens);
  if (tuning.attention_splits < 0 || tuning.attention_splits > 4096)
    return make_error(Errc::kInvalidArgument, "attention_splits {} out of range",
                      tuning.attention_splits);

  if (tuning.attention_cluster != CudaTuning::kAutoCluster && tuning.attention_cluster != 0 &&
      tuning.attention_cluster != 8 && tuning.attention_cluster != 16)
    return make_error(Errc::kInvalidArgument, "attention_cluster {} is not auto ({}), 0, 8 or 16",
                      tuning.attention_cluster, CudaTuning::kAutoCluster);
  if (tuning.attention_chunk != CudaTuning::kAutoChunk && tuning.attention_chunk != 64 &&
      tuning.attention_chunk != 128)
    return make_error(Errc::kInvalidArgument, "attention_chunk {} is not auto ({}), 64 or 128",
                      tuning.attention_chunk, CudaTuning::kAutoChunk);

  auto e = std::unique_ptr<CudaEngine>(new CudaEngine());
  e->options_ = options;
  e->tuning_ = tuning;
  CUDA_CHECK(cudaSetDevice(options.device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&e->stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreate(&e->ev_start_));
  CUDA_CHECK(cudaEventCreate(&e->ev_stop_));
  CUBLAS_CHECK(cublasCreate(&e->cublas_));

  int max_context = options.max_context > 0
                        ? options.max_context
                        : std::min(c.max_position_embeddings, kDefaultMaxContext);
  if (c.max_position_embeddings > 0) max_context = std::min(max_context, c.max_position_embeddings);
  Limits& L = e->limits_;
  L.max_batch = options.max_batch;
  L.max_context = max_context;
  L.max_prefill_tokens = max_context;
  L.block_tokens = options.block_tokens;
  L.max_blocks_per_seq = (max_context + 1 + L.block_tokens - 1) / L.block_tokens;
  L.split_tokens = tuning.split_tokens;
  L.target_splits = tuning.attention_splits;
  // The fused path sizes its splits by context; +1 as for the block tables.
  L.max_splits = L.target_splits > 0
                     ? kernels::decode_max_splits(max_context + 1, L.split_tokens, L.target_splits)
                     : (max_context + L.split_tokens - 1) / L.split_tokens;
  const size_t per_head = 6 * static_cast<size_t>(max_context) * max_context;  // f32 + bf16
  L.heads_per_pass = static_cast<int>(std::clamp<size_t>(
      kScoreBudget / std::max<size_t>(per_head, 1), 1, static_cast<size_t>(c.num_heads)));

  // KV pool size first: the memory budget is planned around it.
  const size_t block_elems = static_cast<size_t>(c.num_kv_heads) * L.block_tokens * c.head_dim;
  const size_t bytes_per_block = block_elems * 2 /*K,V*/ * c.num_layers * sizeof(__nv_bfloat16);
  int64_t blocks = options.kv_blocks;
  if (blocks <= 0 && options.kv_budget_bytes > 0)
    blocks = options.kv_budget_bytes / static_cast<int64_t>(bytes_per_block);
  if (blocks <= 0) blocks = static_cast<int64_t>(L.max_batch) * L.max_blocks_per_seq;
  if (blocks <= 0) return make_error(Errc::kInvalidArgument, "KV cache of 0 blocks");
  e->kv_.blocks = blocks;
  e->kv_.kv_stride = block_elems * blocks;
  e->kv_.layer_stride = 2 * e->kv_.kv_stride;

  const engine::Pipeline pipeline = options.pipeline;
  const bool sync_pipeline = synchronous(pipeline);
  const HostMemory host_kind = host_memory_for(pipeline);
  log->info("cuda: pipeline {}", engine::pipeline_name(pipeline));

  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const auto footprint = RS_TRY(offload::compute_footprint(c));
  const size_t int8_bytes = footprint.step_weight_bytes() + footprint.embedding_bytes;
  bool resident = tuning.prefill_weights == CudaTuning::PrefillWeights::kResident;
  if (tuning.prefill_weights == CudaTuning::PrefillWeights::kAuto) {
    // Resident when the copy leaves a quarter of the card for KV and
    // workspace, and no budget asks to save memory.
    resident =
        options.gpu_memory_bytes == 0 && int8_bytes + bf16_copy_bytes(c) < free_bytes / 4 * 3;
  }

  WeightPlacement placement;
  placement.host_layers = host_kind;
  placement.gemv_layout =
      tuning.tiled_weights ? kernels::WeightLayout::kTiled16x64 : kernels::WeightLayout::kRowMajor;
  LayerStreamer::Mode stream_mode = LayerStreamer::Mode::kRing;
  if (options.gpu_memory_bytes > 0) {
    offload::PlanRequest req;
    req.gpu_budget_bytes = options.gpu_memory_bytes;
    req.kv_bytes = bytes_per_block * static_cast<uint64_t>(blocks);
    req.workspace_bytes = Workspace::device_bytes(c, L, /*dequant_buffer=*/true);
    req.ring_slots = options.ring_slots;
    req.max_batch = L.max_batch;
    offload::Plan plan;
    offload::OffloadMode mode = options.offload;
    if (sync_pipeline && mode != offload::OffloadMode::kStream) {
      // Copy-sync-compute copies every streamed layer; zero-copy reads from
      // pageable memory are impossible. The ring's slots cover its one buffer.
      log->info("cuda: the {} pipeline copies offloaded layers (--offload {} does not apply)",
                engine::pipeline_name(pipeline), offload::offload_mode_name(mode));
      mode = offload::OffloadMode::kStream;
    }
    if (mode == offload::OffloadMode::kAuto) {
      // Refused before anything is measured when even zero-copy, which
      // needs the least memory, cannot fit.
      offload::PlanRequest least = req;
      least.strategy = offload::Strategy::kZeroCopy;
      if (auto refused = offload::make_plan(footprint, least); !refused)
        return std::move(refused).error();
    } else {
      req.strategy = mode == offload::OffloadMode::kZeroCopy ? offload::Strategy::kZeroCopy
                                                             : offload::Strategy::kStream;
      plan = RS_TRY(offload::make_plan(footprint, req));
    }
    // Measured whatever the mode (0.1 s): auto decides by it, and the log
    // states the link floor of the plan.
    const auto link = RS_TRY(measure_link(e->stream_));
    e->stats_.h2d_gbps = link.h2d_gbps;
    e->stats_.zerocopy_gbps = link.zerocopy_gbps;
    log->info(
        "cuda: link: pinned host-to-device copies {:.1f} GB/s, kernel reads of mapped host "
        "memory {:.1f} GB/s",
        link.h2d_gbps, link.zerocopy_gbps);
    if (mode == offload::OffloadMode::kAuto) {
      const auto decision = RS_TRY(offload::decide_offload(footprint, req, link));
      log->info("offload auto: {}", decision.reason);
      plan = decision.plan;
    }
    offload::log_plan(plan);
    e->stats_.plan_lines = plan.lines();
    placement.device_layers = plan.resident_layers;
    placement.embedding_on_host = !plan.embedding_resident;
    if (plan.streamed_layers() > 0) {
      const double rate =
          plan.strategy == offload::Strategy::kZeroCopy ? link.zerocopy_gbps : link.h2d_gbps;
      e->stats_.plan_lines.push_back(plan.floor_line(rate, 1));
      log->info("offload: {}", e->stats_.plan_lines.back());
      e->stats_.offload_strategy = offload::strategy_name(plan.strategy);
      stream_mode = plan.strategy == offload::Strategy::kZeroCopy ? LayerStreamer::Mode::kZeroCopy
                                                                  : LayerStreamer::Mode::kRing;
    }
    resident = false;
  }
  if (sync_pipeline) stream_mode = LayerStreamer::Mode::kSync;

  e->model_ = std::make_unique<DeviceModel>(RS_TRY(make_model(resident, placement, e->stream_)));
  resident = e->model_->resident_bf16();
  e->stats_.weight_bytes = e->model_->device_bytes();
  e->stats_.resident_bf16 = resident;
  log->info("cuda: weights: {:.2f} GB on the GPU, {:.2f} GB in host memory; prefill weights {}",
            e->model_->device_bytes() / 1e9, e->model_->host_bytes() / 1e9,
            resident ? "resident bf16" : "dequantized per layer");
  return finish_create(std::move(e), stream_mode);
}

Expected<std::unique_ptr<CudaEngine>> CudaEngine::finish_create(std::unique_ptr<CudaEngine> e,
                                                                LayerStreamer::Mode stream_mode) {
  auto log = log::get("engine");
  const HostMemory host_kind = host_memory_for(e->options_.pipeline);
  const auto& c = e->model_->config();
  const auto& options = e->options_;
  Limits& L = e->limits_;
  const bool resident = e->model_->resident_bf16();
  e->streamer_ = RS_TRY(LayerStreamer::create(*e->model_, stream_mode, options.ring_slots));
  const int streamed = c.num_layers - e->model_->device_layers();
  e->stats_.resident_layers = e->model_->device_layers();
  e->stats_.streamed_layers = streamed;
  e->stats_.streamed_bytes_per_step = e->streamer_.bytes_per_pass();
  e->stats_.host_pinned_bytes = e->model_->host_bytes();

  e->ws_ = std::make_unique<Workspace>(RS_TRY(Workspace::allocate(c, L, !resident, host_kind)));
  CUBLAS_CHECK(
      cublasSetWorkspace(e->cublas_, e->ws_->cublas_workspace, e->ws_->cublas_workspace_bytes));
  if (e->tuning_.tune_gemv) {
    const std::string tuned = RS_TRY(tune_gemv(*e->model_, *e->ws_, e->stream_,
                                               e->tuning_.persistent_gemv, e->tuning_.ring_gemv));
    log->info("cuda: decode GEMV shapes: {}", tuned);
  }

  const size_t kv_bytes = e->kv_.layer_stride * c.num_layers * sizeof(__nv_bfloat16);
  e->kv_.storage = RS_TRY(DeviceBuffer::allocate(kv_bytes, "KV cache"));
  e->blocks_ = KvBlocks(e->kv_.blocks);
  e->stats_.gpu_bytes = e->model_->device_bytes() + e->streamer_.ring_bytes() +
                        e->ws_->device.bytes() + e->ws_->meta_device.bytes() +
                        e->ws_->results_device.bytes() + e->kv_.storage.bytes();
  if (streamed > 0) {
    log->info(
        "cuda: {} of {} layers on the GPU, {} in host memory ({}, {:.2f} GB crossing the "
        "link per step)",
        e->model_->device_layers(), c.num_layers, streamed,
        stream_mode == LayerStreamer::Mode::kZeroCopy ? "read in place"
        : stream_mode == LayerStreamer::Mode::kSync   ? "copied before each layer"
                                                      : "streamed through the ring",
        e->stats_.streamed_bytes_per_step / 1e9);
  }
  if (options.gpu_memory_bytes > 0)
    log->info("cuda: {:.2f} GB allocated on the GPU of the {:.2f} GB budget",
              e->stats_.gpu_bytes / 1e9, options.gpu_memory_bytes / 1e9);
  int cc_major = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, options.device));
  const bool sync_pipeline = synchronous(e->options_.pipeline);
  const bool pdl = e->tuning_.pdl && cc_major >= 9 && !sync_pipeline;
  log->info("cuda: programmatic dependent launch {}", pdl               ? "on"
                                                      : !e->tuning_.pdl ? "off"
                                                      : sync_pipeline ? "off (synchronous pipeline)"
                                                                      : "off (needs sm_90)");
  DecodeKernels decode_kernels;
  decode_kernels.pdl = pdl;
  auto cluster_ok = [&](int blocks) {
    return kernels::attention_decode_rope_supported(options.device, blocks, c.num_heads,
                                                    c.num_kv_heads, c.head_dim);
  };
  const int want_cluster = e->tuning_.attention_cluster;
  if (want_cluster == CudaTuning::kAutoCluster) {
    // Auto needs both sizes; a GPU that launches only the portable 8 gets 8.
    decode_kernels.attention_cluster = cluster_ok(16) && cluster_ok(8) ? DecodeKernels::kAutoCluster
                                       : cluster_ok(8)                 ? 8
                                                                       : 0;
  } else if (want_cluster > 0 && cluster_ok(want_cluster)) {
    decode_kernels.attention_cluster = want_cluster;
  }
  CUDA_CHECK(
      cudaDeviceGetAttribute(&decode_kernels.sms, cudaDevAttrMultiProcessorCount, options.device));
  decode_kernels.num_kv_heads = c.num_kv_heads;
  decode_kernels.attention_chunk = e->tuning_.attention_chunk;
  if (decode_kernels.attention_cluster != 0)
    for (int i : {0, 1})
      decode_kernels.resident_clusters_at_128[i] = kernels::attention_decode_rope_resident_clusters(
          options.device, i == 0 ? 8 : 16, 128, c.num_heads, c.num_kv_heads, c.head_dim);
  decode_kernels.cluster_max_context = e->tuning_.cluster_attention_max_context;
  decode_kernels.sampling = e->tuning_.sampling == CudaTuning::Sampling::kCandidates
                                ? kernels::SampleStrategy::kCandidates
                                : kernels::SampleStrategy::kOneBlock;
  log->info("cuda: sampled rows draw {}", e->tuning_.sampling == CudaTuning::Sampling::kCandidates
                                              ? "from candidates (mass histogram, gather, sort)"
                                              : "with one block over the vocabulary");
  const int cluster = decode_kernels.attention_cluster;
  // What `of_batch` picks over the batch sizes, where it takes `big` up to
  // some batch and `small` past it: "16", "16 (batch <= 2) or 8" or "8".
  auto by_batch = [&](int big, int small, auto&& of_batch) -> std::string {
    int upto = 0;  // the largest batch that gets `big`
    while (upto < L.max_batch && of_batch(upto + 1) == big) ++upto;
    if (upto == 0) return std::to_string(small);
    return upto >= L.max_batch ? std::to_string(big)
                               : fmt::format("{} (batch <= {}) or {}", big, upto, small);
  };
  auto cluster_sizes = [&] {
    return by_batch(16, 8, [&](int b) { return decode_kernels.cluster_blocks(b); });
  };
  auto chunk_sizes = [&] {
    return by_batch(128, 64, [&](int b) { return decode_kernels.chunk_keys(b); });
  };
  log->info(
      "cuda: decode attention {}",
      cluster != 0
          ? fmt::format("with RoPE fused, on clusters of {} blocks, chunks of {} keys, {}",
                        cluster_sizes(), chunk_sizes(),
                        e->tuning_.cluster_attention_max_context == std::numeric_limits<int>::max()
                            ? std::string("at every context")
                            : fmt::format("up to a context of {}",
                                          e->tuning_.cluster_attention_max_context))
      : want_cluster != 0 ? "split, RoPE separate (no thread block clusters)"
                          : "split, RoPE separate");
  e->forward_ = std::make_unique<Forward>(*e->model_, *e->ws_, e->kv_, e->cublas_, decode_kernels,
                                          streamed > 0 ? &e->streamer_ : nullptr);
  e->graphs_.assign(4 * (L.max_batch + 1), nullptr);

  e->info_.backend = "cuda";
  e->info_.model_name = c.name;
  e->info_.vocab_size = c.vocab_size;
  e->info_.max_context = L.max_context;
  e->info_.max_batch = L.max_batch;
  e->info_.eos_token_ids = c.eos_token_ids;
  log->info("cuda: {} KV blocks of {} tokens ({:.2f} GB), max_context {}, max_batch {}",
            e->kv_.blocks, L.block_tokens, kv_bytes / 1e9, L.max_context, L.max_batch);
  return e;
}

Status CudaEngine::add(const SequenceSpec& spec) {
  if (spec.prompt.empty())
    return make_error(Errc::kInvalidArgument, "seq={}: empty prompt", spec.id);
  if (spec.max_new_tokens < 0)
    return make_error(Errc::kInvalidArgument, "seq={}: max_new_tokens {} is negative", spec.id,
                      spec.max_new_tokens);
  for (int32_t t : spec.prompt)
    if (t < 0 || t >= info_.vocab_size)
      return make_error(Errc::kInvalidArgument, "seq={}: token {} outside the vocabulary of {}",
                        spec.id, t, info_.vocab_size);
  for (const auto& s : seqs_)
    if (s.spec.id == spec.id)
      return make_error(Errc::kInvalidArgument, "seq={}: already active", spec.id);
  const int prompt = static_cast<int>(spec.prompt.size());
  if (!fits_ever(prompt, spec.max_new_tokens))
    return make_error(Errc::kTooLarge,
                      "seq={}: {} prompt + {} new tokens exceed the context of {} or the KV "
                      "cache of {} tokens",
                      spec.id, prompt, spec.max_new_tokens, info_.max_context,
                      blocks_.total() * limits_.block_tokens);
  if (seqs_.size() >= static_cast<size_t>(limits_.max_batch))
    return make_error(Errc::kResourceExhausted, "seq={}: {} sequences already running", spec.id,
                      seqs_.size());
  Sequence s;
  s.spec = spec;
  if (!blocks_.allocate(blocks_needed(prompt, spec.max_new_tokens), s.blocks))
    return make_error(Errc::kResourceExhausted, "seq={}: {} KV blocks free, {} needed", spec.id,
                      blocks_.free(), blocks_needed(prompt, spec.max_new_tokens));
  log::get("engine")->debug("seq={}: added, {} prompt tokens, {} KV blocks", spec.id, prompt,
                            s.blocks.size());
  seqs_.push_back(std::move(s));
  return ok();
}

void CudaEngine::release(SeqId id) {
  for (auto it = seqs_.begin(); it != seqs_.end(); ++it) {
    if (it->spec.id == id) {
      blocks_.release(it->blocks);
      seqs_.erase(it);
      return;
    }
  }
}

SampledToken CudaEngine::collect(Sequence& s, int row, bool from_prefill) {
  const auto& r = ws_->results.host<kernels::SampleResult>()[row];
  SampledToken t;
  t.id = s.spec.id;
  t.token = r.token;
  t.logprob = r.logprob;
  t.from_prefill = from_prefill;
  const int n = std::min(std::clamp(s.spec.sampling.top_logprobs, 0, kernels::kMaxTopLogprobs),
                         info_.vocab_size);
  t.top.reserve(n);
  for (int k = 0; k < n; ++k) t.top.push_back({r.top_ids[k], r.top_logprobs[k]});
  s.next_token = r.token;
  ++s.generated;
  return t;
}

Status CudaEngine::run_prefill(std::vector<Sequence*>& group, StepResult& result) {
  const StepMeta& m = ws_->host_meta;
  std::vector<int> start(group.size()), len(group.size());
  bool any_row_samples = false;
  int row = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    Sequence& s = *group[i];
    start[i] = row;
    len[i] = static_cast<int>(s.spec.prompt.size());
    for (int p = 0; p < len[i]; ++p, ++row) {
      m.tokens[row] = s.spec.prompt[p];
      m.positions[row] = p;
      m.slots[row] = slot_of(s, p);
    }
    m.last_rows[i] = row - 1;
    fill_sampling(m.sampling[i], s);
    any_row_samples |= kernels::samples(m.sampling[i]);
  }
  RS_TRY_STATUS(upload_meta());
  CUDA_CHECK(cudaEventRecord(ev_start_, stream_));
  RS_TRY_STATUS(forward_->prefill(row, static_cast<int>(group.size()), start.data(), len.data(),
                                  forward_->sampling_for(any_row_samples), stream_));
  CUDA_CHECK(cudaEventRecord(ev_stop_, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  RS_TRY_STATUS(fetch_results());
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, ev_start_, ev_stop_));
  stats_.last_prefill_gpu_ms = ms;
  for (size_t i = 0; i < group.size(); ++i) {
    Sequence& s = *group[i];
    s.cached = len[i];
    s.prefilled = true;
    result.tokens.push_back(collect(s, static_cast<int>(i), true));
  }
  result.prefill_tokens += row;
  return ok();
}

Status CudaEngine::upload_meta() {
  switch (options_.pipeline) {
    case engine::Pipeline::kNaive:  // from pageable memory: staged by the driver
    case engine::Pipeline::kPinned:
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      CUDA_CHECK(cudaMemcpy(ws_->meta_device.as(), ws_->meta_host.host(), ws_->meta_bytes,
                            cudaMemcpyHostToDevice));
      return ok();
    case engine::Pipeline::kAsync:
    case engine::Pipeline::kGraphs:
      CUDA_CHECK(cudaMemcpyAsync(ws_->meta_device.as(), ws_->meta_host.host(), ws_->meta_bytes,
                                 cudaMemcpyHostToDevice, stream_));
      return ok();
  }
  return ok();
}

Status CudaEngine::fetch_results() {
  if (ws_->results.pinned()) return ok();  // the sampler wrote them through the mapping
  CUDA_CHECK(cudaMemcpy(ws_->results.host(), ws_->results_device.as(), ws_->results.bytes(),
                        cudaMemcpyDeviceToHost));
  return ok();
}

Expected<cudaGraphExec_t> CudaEngine::decode_graph(int batch, DecodeAttention attention,
                                                   kernels::SampleStrategy sampling) {
  cudaGraphExec_t& exec =
      graphs_[4 * batch + 2 * (sampling == kernels::SampleStrategy::kCandidates) +
              static_cast<int>(attention)];
  if (exec) return exec;
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  CUDA_CHECK(cudaMemcpyAsync(ws_->meta_device.as(), ws_->meta_host.host(), ws_->meta_bytes,
                             cudaMemcpyHostToDevice, stream_));
  Status st = forward_->decode(batch, stream_, attention, sampling);
  const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
  if (!st) {
    if (graph) cudaGraphDestroy(graph);
    return std::move(st).error();
  }
  CUDA_CHECK(end);
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(inst);
  log::get("engine")->debug(
      "cuda: captured the decode graph for batch {} ({} attention, {} sampler)", batch,
      attention == DecodeAttention::kCluster ? "cluster" : "split",
      sampling == kernels::SampleStrategy::kCandidates ? "candidates" : "one-block");
  return exec;
}

Status CudaEngine::run_decode(std::vector<Sequence*>& batch, StepResult& result) {
  const StepMeta& m = ws_->host_meta;
  const int n = static_cast<int>(batch.size());
  const int MB = limits_.max_blocks_per_seq;
  // A sequence stepped past its max_new_tokens grows its block table while
  // the pool and the context allow.
  for (Sequence* s : batch) {
    if (s->cached >= limits_.max_context)
      return make_error(Errc::kResourceExhausted, "seq={}: context of {} tokens is full",
                        s->spec.id, limits_.max_context);
    if (s->cached / limits_.block_tokens >= static_cast<int>(s->blocks.size()) &&
        !blocks_.allocate(1, s->blocks))
      return make_error(Errc::kResourceExhausted, "seq={}: no free KV block", s->spec.id);
  }
  int longest = 0;  // context, for the choice of attention
  bool any_row_samples = false;
  for (int i = 0; i < n; ++i) {
    Sequence& s = *batch[i];
    const int pos = s.cached;
    m.tokens[i] = s.next_token;
    m.positions[i] = pos;
    m.slots[i] = slot_of(s, pos);
    m.context_lens[i] = pos + 1;
    longest = std::max(longest, pos + 1);
    std::fill(m.block_tables + static_cast<size_t>(i) * MB,
              m.block_tables + static_cast<size_t>(i + 1) * MB, 0);
    std::copy(s.blocks.begin(), s.blocks.end(), m.block_tables + static_cast<size_t>(i) * MB);
    fill_sampling(m.sampling[i], s);
    any_row_samples |= kernels::samples(m.sampling[i]);
  }
  const DecodeAttention attention = forward_->attention_for(longest);
  const kernels::SampleStrategy sampling = forward_->sampling_for(any_row_samples);
  CUDA_CHECK(cudaEventRecord(ev_start_, stream_));
  if (options_.pipeline == engine::Pipeline::kGraphs) {
    const cudaGraphExec_t graph = RS_TRY(decode_graph(n, attention, sampling));
    CUDA_CHECK(cudaGraphLaunch(graph, stream_));
  } else {
    RS_TRY_STATUS(upload_meta());
    RS_TRY_STATUS(forward_->decode(n, stream_, attention, sampling));
  }
  CUDA_CHECK(cudaEventRecord(ev_stop_, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  RS_TRY_STATUS(fetch_results());
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, ev_start_, ev_stop_));
  stats_.last_decode_gpu_ms = ms;
  for (int i = 0; i < n; ++i) {
    Sequence& s = *batch[i];
    ++s.cached;
    result.tokens.push_back(collect(s, i, false));
  }
  result.decode_tokens += n;
  return ok();
}

Expected<StepResult> CudaEngine::step() {
  StepResult result;
  if (seqs_.empty()) return result;
  std::vector<Sequence*> decoding, pending;
  for (auto& s : seqs_) (s.prefilled ? decoding : pending).push_back(&s);
  // Prefill in groups that fit the prefill workspace.
  std::vector<Sequence*> group;
  int tokens = 0;
  for (Sequence* s : pending) {
    const int len = static_cast<int>(s->spec.prompt.size());
    if (!group.empty() && tokens + len > limits_.max_prefill_tokens) {
      RS_TRY_STATUS(run_prefill(group, result));
      group.clear();
      tokens = 0;
    }
    group.push_back(s);
    tokens += len;
  }
  if (!group.empty()) RS_TRY_STATUS(run_prefill(group, result));
  if (!decoding.empty()) RS_TRY_STATUS(run_decode(decoding, result));
  return result;
}

}  // namespace

Expected<std::unique_ptr<engine::Engine>> create_cuda_engine(const engine::EngineOptions& options,
                                                             model::ModelWeights weights,
                                                             const CudaTuning& tuning) {
  UploadStats up;
  auto make = [&](bool resident, const WeightPlacement& placement,
                  cudaStream_t stream) -> Expected<DeviceModel> {
    return DeviceModel::upload(weights, resident, placement, stream, &up);
  };
  auto e = RS_TRY(CudaEngine::create(options, weights.config, make, tuning));
  e->set_upload(up);
  return std::unique_ptr<engine::Engine>(std::move(e));
}

Expected<std::unique_ptr<engine::Engine>> create_cuda_engine(const engine::EngineOptions& options,
                                                             model::ModelWeights weights) {
  return create_cuda_engine(options, std::move(weights), CudaTuning{});
}

Expected<std::unique_ptr<engine::Engine>> load_cuda_engine(const engine::EngineOptions& options,
                                                           const std::string& model_spec,
                                                           const model::LoadOptions& load,
                                                           const CudaTuning& tuning) {
  std::string why;
  auto checkpoint = RS_TRY(open_gpu_checkpoint(model_spec, &why));
  if (!checkpoint) {
    log::get("model")->info("{}: loaded on the host ({})", model_spec, why);
    model::ModelWeights weights = RS_TRY(model::load_model(model_spec, load));
    return create_cuda_engine(options, std::move(weights), tuning);
  }
  CheckpointLoadStats st;
  auto make = [&](bool resident, const WeightPlacement& placement,
                  cudaStream_t stream) -> Expected<DeviceModel> {
    return load_checkpoint_to_device(*checkpoint, resident, placement, stream, &st, tuning.load);
  };
  auto e = RS_TRY(CudaEngine::create(options, checkpoint->config, make, tuning));
  e->set_load(st);
  return std::unique_ptr<engine::Engine>(std::move(e));
}

}  // namespace ringserve::cuda
