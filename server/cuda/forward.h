// The forward passes of the Qwen2 decoder on the GPU, as sequences of kernel
// launches on one stream: decode (one token per sequence, INT8 GEMVs; this is
// what the CUDA graphs capture) and prefill (prompt tokens, cuBLAS GEMMs).
// Both read their per-step inputs from the workspace's device metadata and
// leave sampled tokens in its mapped results buffer.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "attention.h"
#include "cuda/device_model.h"
#include "cuda/layer_streamer.h"
#include "cuda/workspace.h"
#include "ringserve/common/expected.h"
#include "rope_kv.h"
#include "sampling.h"

namespace ringserve::cuda {

// The paged KV pool: per layer, K then V, each [blocks][kv_heads][block_tokens][head_dim].
struct KvPool {
  DeviceBuffer storage;
  int64_t blocks = 0;
  size_t layer_stride = 0;  // elements between one layer's K and the next layer's K
  size_t kv_stride = 0;     // elements from a layer's K to its V
  __nv_bfloat16* k(int layer) const { return storage.as<__nv_bfloat16>() + layer * layer_stride; }
  __nv_bfloat16* v(int layer) const { return k(layer) + kv_stride; }
};

// The decode attention of one step (Forward::attention_for).
enum class DecodeAttention { kCluster = 0, kSplit = 1 };

// Which decode kernels Forward launches.
struct DecodeKernels {
  // Launch the decode kernels with programmatic dependent launch (see
  // kernels::GemvArgs::pdl; sm_90 only).
  bool pdl = false;
  // Blocks per cluster of the fused RoPE + attention kernel
  // (kernels::attention_decode_rope; sm_90 only): 8 or 16, or kAutoCluster
  // for kernels::attention_cluster_blocks of the batch size; 0:
  // rope_kv_write, then attention_decode.
  static constexpr int kAutoCluster = -1;
  int attention_cluster = 0;
  int sms = 0;           // multiprocessors, for kAutoCluster
  int num_kv_heads = 0;  // of the model, for kAutoCluster
  // Steps with a longer context than this take the split kernels even so
  // (CudaTuning::cluster_attention_max_context).
  int cluster_max_context = 0;
  // How a sampled row draws (CudaTuning::sampling).
  kernels::SampleStrategy sampling = kernels::SampleStrategy::kOneBlock;

  // Keys per chunk of the cluster kernel: 64 or 128 fixed, or
  // kAutoChunk for kernels::attention_chunk_keys of the batch size.
  static constexpr int kAutoChunk = 0;
  int attention_chunk = kAutoChunk;
  // Clusters of 128-key chunks the GPU holds at once, by cluster size
  // [0]: 8, [1]: 16 (kernels::attention_decode_rope_resident_clusters), for
  // chunk_keys.
  int resident_clusters_at_128[2] = {0, 0};

  int cluster_blocks(int batch) const {
    return attention_cluster == kAutoCluster
               ? kernels::attention_cluster_blocks(batch, num_kv_heads, sms)
               : attention_cluster;
  }
  // 128 only where such clusters fit at all, even when asked for.
  int chunk_keys(int batch) const {
    const int blocks = cluster_blocks(batch);
    const int resident = resident_clusters_at_128[blocks == 16 ? 1 : 0];
    if (attention_chunk == 64 || resident == 0) return 64;
    if (attention_chunk == 128) return 128;
    return kernels::attention_chunk_keys(batch * num_kv_heads, blocks, sms, resident);
  }
};

class Forward {
 public:
  // streamer: brings host-resident layers in (null when every layer is on
  // the GPU).
  Forward(const DeviceModel& model, Workspace& ws, const KvPool& kv, cublasHandle_t cublas,
          DecodeKernels kernels = {}, LayerStreamer* streamer = nullptr)
      : m_(model), ws_(ws), kv_(kv), cublas_(cublas), kernels_(kernels), streamer_(streamer) {}

  // The attention a decode step whose longest context is `longest` runs:
  // kCluster only where the cluster kernel is on and the context short
  // enough, so a step never has two names for the same kernels.
  DecodeAttention attention_for(int longest) const {
    return kernels_.attention_cluster != 0 && longest <= kernels_.cluster_max_context
               ? DecodeAttention::kCluster
               : DecodeAttention::kSplit;
  }

  // The sampler of a pass: the configured strategy when some row samples,
  // else the one-block path, which draws the same greedy tokens without the
  // candidates strategy's two extra launches.
  kernels::SampleStrategy sampling_for(bool any_row_samples) const {
    return any_row_samples ? kernels_.sampling : kernels::SampleStrategy::kOneBlock;
  }

  // Decode `batch` sequences: inputs in dev_meta rows [0, batch).
  // `attention` comes from attention_for, `sampling` from sampling_for.
  Status decode(int batch, cudaStream_t stream, DecodeAttention attention,
                kernels::SampleStrategy sampling);

  // Prefill `nseq` prompts packed into ntok rows of dev_meta; seq_start and
  // seq_len are host arrays. Samples each sequence's first token.
  Status prefill(int ntok, int nseq, const int* seq_start, const int* seq_len,
                 kernels::SampleStrategy sampling, cudaStream_t stream);

 private:
  Status logits_and_sample(int rows, const int32_t* rows_index, kernels::SampleStrategy sampling,
                           cudaStream_t stream);
  kernels::RopeKvArgs rope_args(int layer, int ntok) const;
  Status decode_attention(int layer, int batch, bool cluster, cudaStream_t stream);
  Status linear_prefill(const DeviceLinear& l, int ntok, const __nv_bfloat16* x,
                        cudaStream_t stream);

  const DeviceModel& m_;
  Workspace& ws_;
  const KvPool& kv_;
  cublasHandle_t cublas_;
  DecodeKernels kernels_;
  LayerStreamer* streamer_ = nullptr;
};

}  // namespace ringserve::cuda
