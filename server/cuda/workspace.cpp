#include "cuda/workspace.h"

#include <algorithm>

#include "attention.h"
#include "cuda_check.h"
#include "model/rope_frequencies.h"
#include "rope_kv.h"

namespace ringserve::cuda {

Expected<Workspace> Workspace::allocate(const model::ModelConfig& c, const Limits& L,
                                        bool dequant_buffer) {
  Workspace w;
  w.limits = L;
  const size_t B = L.max_batch, P = L.max_prefill_tokens, H = c.hidden_size;
  const size_t QKV = c.q_dim() + 2 * c.kv_dim(), I = c.intermediate_size, V = c.vocab_size;
  const size_t rows = std::max(B, P);
  const size_t gemm_cols = std::max({QKV, 2 * I, H});
  const size_t max_len = std::min<size_t>(L.max_context, P);
  const size_t hpp = L.heads_per_pass;

  Arena a;
  const size_t o_resid = a.reserve(4 * rows * H);
  const size_t o_xn = a.reserve(2 * std::max(rows, 2 * B) * H);
  const size_t o_qkv = a.reserve(4 * B * QKV);
  const size_t o_gemm = a.reserve(4 * P * gemm_cols);
  const size_t o_q = a.reserve(2 * rows * c.q_dim());
  const size_t o_k = a.reserve(2 * P * c.kv_dim());
  const size_t o_v = a.reserve(2 * P * c.kv_dim());
  const size_t o_attn = a.reserve(2 * rows * c.q_dim());
  const size_t o_act = a.reserve(2 * rows * I);
  const size_t o_logits = a.reserve(4 * 2 * B * V);
  const size_t o_scratch = a.reserve(4 * B * V);
  const size_t o_po = a.reserve(4 * B * c.num_heads * L.max_splits * c.head_dim);
  const size_t o_pml = a.reserve(4 * B * c.num_heads * L.max_splits * 2);
  const size_t o_counters = a.reserve(4 * B * c.num_kv_heads);
  const size_t o_freq = a.reserve(4 * (c.head_dim / 2));
  const size_t o_scores = a.reserve(4 * hpp * max_len * max_len);
  const size_t o_probs = a.reserve(2 * hpp * max_len * max_len);
  const size_t o_ptrs = a.reserve(sizeof(void*) * kernels::prefill_pointer_count(c.num_heads, B));
  const size_t o_deq = dequant_buffer ? a.reserve(2 * gemm_cols * std::max(H, I)) : SIZE_MAX;
  w.cublas_workspace_bytes = 32u << 20;
  const size_t o_cublas = a.reserve(w.cublas_workspace_bytes);
  w.device = RS_TRY(DeviceBuffer::allocate(a.size(), "workspace"));
  char* base = w.device.as<char>();
  w.resid = reinterpret_cast<float*>(base + o_resid);
  w.xn = reinterpret_cast<__nv_bfloat16*>(base + o_xn);
  w.qkv_f32 = reinterpret_cast<float*>(base + o_qkv);
  w.gemm_out = reinterpret_cast<float*>(base + o_gemm);
  w.q = reinterpret_cast<__nv_bfloat16*>(base + o_q);
  w.k = reinterpret_cast<__nv_bfloat16*>(base + o_k);
  w.v = reinterpret_cast<__nv_bfloat16*>(base + o_v);
  w.attn = reinterpret_cast<__nv_bfloat16*>(base + o_attn);
  w.act = reinterpret_cast<__nv_bfloat16*>(base + o_act);
  w.logits = reinterpret_cast<float*>(base + o_logits);
  w.sample_scratch = reinterpret_cast<float*>(base + o_scratch);
  w.partial_o = reinterpret_cast<float*>(base + o_po);
  w.partial_ml = reinterpret_cast<float*>(base + o_pml);
  w.split_counters = reinterpret_cast<int*>(base + o_counters);
  w.rope_inv_freq = reinterpret_cast<float*>(base + o_freq);
  w.scores = reinterpret_cast<float*>(base + o_scores);
  w.probs = reinterpret_cast<__nv_bfloat16*>(base + o_probs);
  w.pointers = reinterpret_cast<void**>(base + o_ptrs);
  w.dequant = o_deq == SIZE_MAX ? nullptr : reinterpret_cast<__nv_bfloat16*>(base + o_deq);
  w.cublas_workspace = base + o_cublas;
  // Once, at start-up: the split counters start at zero (each merge resets
  // its own), and the RoPE frequencies are the CPU engine's bf16 values.
  CUDA_CHECK(cudaMemset(w.split_counters, 0, 4 * B * c.num_kv_heads));
  const std::vector<float> inv_freq = model::rope_inv_freq(c.head_dim, c.rope_theta);
  CUDA_CHECK(
      cudaMemcpy(w.rope_inv_freq, inv_freq.data(), 4 * inv_freq.size(), cudaMemcpyHostToDevice));

  // Metadata: same offsets in the pinned and the device copy.
  Arena m(16);
  const size_t o_tok = m.reserve(4 * rows), o_pos = m.reserve(4 * rows),
               o_slot = m.reserve(4 * rows);
  const size_t o_ctx = m.reserve(4 * B);
  const size_t o_bt = m.reserve(4 * B * L.max_blocks_per_seq);
  const size_t o_last = m.reserve(4 * B);
  const size_t o_samp = m.reserve(sizeof(kernels::SamplingSlot) * B);
  w.meta_bytes = m.size();
  w.meta_host = RS_TRY(PinnedBuffer::allocate(w.meta_bytes, "step metadata"));
  w.meta_device = RS_TRY(DeviceBuffer::allocate(w.meta_bytes, "step metadata"));
  auto views = [&](char* b) {
    return StepMeta{reinterpret_cast<int32_t*>(b + o_tok),
                    reinterpret_cast<int32_t*>(b + o_pos),
                    reinterpret_cast<int32_t*>(b + o_slot),
                    reinterpret_cast<int32_t*>(b + o_ctx),
                    reinterpret_cast<int32_t*>(b + o_bt),
                    reinterpret_cast<int32_t*>(b + o_last),
                    reinterpret_cast<kernels::SamplingSlot*>(b + o_samp)};
  };
  w.host_meta = views(w.meta_host.host<char>());
  w.dev_meta = views(w.meta_device.as<char>());
  w.results = RS_TRY(PinnedBuffer::allocate(sizeof(kernels::SampleResult) * B, "sample results"));
  return w;
}

}  // namespace ringserve::cuda
