#include "cuda/workspace.h"

#include <algorithm>

#include "attention.h"
#include "cuda_check.h"
#include "model/rope_frequencies.h"
#include "rope_kv.h"

namespace ringserve::cuda {

namespace {

// Offsets of every buffer inside the one device allocation.
struct Layout {
  size_t resid, xn, qkv, gemm, q, k, v, attn, act, logits, scratch, head, po, pml, counters, freq,
      scores, probs, ptrs, deq, cublas, total;
};

constexpr size_t kCublasWorkspaceBytes = 32u << 20;

Layout layout(const model::ModelConfig& c, const Limits& L, bool dequant_buffer) {
  const size_t B = L.max_batch, P = L.max_prefill_tokens, H = c.hidden_size;
  const size_t QKV = c.q_dim() + 2 * c.kv_dim(), I = c.intermediate_size, V = c.vocab_size;
  const size_t rows = std::max(B, P);
  const size_t gemm_cols = std::max({QKV, 2 * I, H});
  const size_t max_len = std::min<size_t>(L.max_context, P);
  const size_t hpp = L.heads_per_pass;

  Arena a;
  Layout o{};
  o.resid = a.reserve(4 * rows * H);
  o.xn = a.reserve(2 * std::max(rows, 2 * B) * H);
  o.qkv = a.reserve(4 * B * QKV);
  o.gemm = a.reserve(4 * P * gemm_cols);
  o.q = a.reserve(2 * rows * c.q_dim());
  o.k = a.reserve(2 * P * c.kv_dim());
  o.v = a.reserve(2 * P * c.kv_dim());
  o.attn = a.reserve(2 * rows * c.q_dim());
  o.act = a.reserve(2 * rows * I);
  o.logits = a.reserve(4 * 2 * B * V);
  o.scratch = a.reserve(4 * B * V);
  o.head = a.reserve(sizeof(kernels::SamplingRowScratch) * B);
  o.po = a.reserve(4 * B * c.num_heads * L.max_splits * c.head_dim);
  o.pml = a.reserve(4 * B * c.num_heads * L.max_splits * 2);
  o.counters = a.reserve(4 * B * c.num_kv_heads);
  o.freq = a.reserve(4 * (c.head_dim / 2));
  o.scores = a.reserve(4 * hpp * max_len * max_len);
  o.probs = a.reserve(2 * hpp * max_len * max_len);
  o.ptrs = a.reserve(sizeof(void*) * kernels::prefill_pointer_count(c.num_heads, B));
  // One layer linear at a time in bf16: the largest is qkv, gate_up or down.
  const size_t largest_linear = std::max({QKV * H, 2 * I * H, H * c.q_dim(), H * I});
  o.deq = dequant_buffer ? a.reserve(2 * largest_linear) : SIZE_MAX;
  o.cublas = a.reserve(kCublasWorkspaceBytes);
  o.total = a.size();
  return o;
}

// Metadata offsets: the same in the host and the device copy.
struct MetaLayout {
  size_t tok, pos, slot, ctx, bt, last, samp, total;
};

MetaLayout meta_layout(const Limits& L) {
  const size_t B = L.max_batch, rows = std::max<size_t>(B, L.max_prefill_tokens);
  Arena m(16);
  MetaLayout o{};
  o.tok = m.reserve(4 * rows);
  o.pos = m.reserve(4 * rows);
  o.slot = m.reserve(4 * rows);
  o.ctx = m.reserve(4 * B);
  o.bt = m.reserve(4 * B * L.max_blocks_per_seq);
  o.last = m.reserve(4 * B);
  o.samp = m.reserve(sizeof(kernels::SamplingSlot) * B);
  o.total = m.size();
  return o;
}

}  // namespace

size_t Workspace::device_bytes(const model::ModelConfig& c, const Limits& limits,
                               bool dequant_buffer) {
  return layout(c, limits, dequant_buffer).total + meta_layout(limits).total +
         sizeof(kernels::SampleResult) * limits.max_batch;
}

Expected<Workspace> Workspace::allocate(const model::ModelConfig& c, const Limits& L,
                                        bool dequant_buffer, HostMemory host_kind) {
  Workspace w;
  w.limits = L;
  const size_t B = L.max_batch;
  const Layout o = layout(c, L, dequant_buffer);
  w.cublas_workspace_bytes = kCublasWorkspaceBytes;
  w.device = RS_TRY(DeviceBuffer::allocate(o.total, "workspace"));
  char* base = w.device.as<char>();
  w.resid = reinterpret_cast<float*>(base + o.resid);
  w.xn = reinterpret_cast<__nv_bfloat16*>(base + o.xn);
  w.qkv_f32 = reinterpret_cast<float*>(base + o.qkv);
  w.gemm_out = reinterpret_cast<float*>(base + o.gemm);
  w.q = reinterpret_cast<__nv_bfloat16*>(base + o.q);
  w.k = reinterpret_cast<__nv_bfloat16*>(base + o.k);
  w.v = reinterpret_cast<__nv_bfloat16*>(base + o.v);
  w.attn = reinterpret_cast<__nv_bfloat16*>(base + o.attn);
  w.act = reinterpret_cast<__nv_bfloat16*>(base + o.act);
  w.logits = reinterpret_cast<float*>(base + o.logits);
  w.sample_scratch = reinterpret_cast<float*>(base + o.scratch);
  w.sample_rows = reinterpret_cast<kernels::SamplingRowScratch*>(base + o.head);
  w.partial_o = reinterpret_cast<float*>(base + o.po);
  w.partial_ml = reinterpret_cast<float*>(base + o.pml);
  w.split_counters = reinterpret_cast<int*>(base + o.counters);
  w.rope_inv_freq = reinterpret_cast<float*>(base + o.freq);
  w.scores = reinterpret_cast<float*>(base + o.scores);
  w.probs = reinterpret_cast<__nv_bfloat16*>(base + o.probs);
  w.pointers = reinterpret_cast<void**>(base + o.ptrs);
  w.dequant = o.deq == SIZE_MAX ? nullptr : reinterpret_cast<__nv_bfloat16*>(base + o.deq);
  w.cublas_workspace = base + o.cublas;
  // Once, at start-up: the split counters start at zero (each merge resets
  // its own), and the RoPE frequencies are the CPU engine's bf16 values.
  CUDA_CHECK(cudaMemset(w.split_counters, 0, 4 * B * c.num_kv_heads));
  const std::vector<float> inv_freq = model::rope_inv_freq(c.head_dim, c.rope_theta);
  CUDA_CHECK(
      cudaMemcpy(w.rope_inv_freq, inv_freq.data(), 4 * inv_freq.size(), cudaMemcpyHostToDevice));

  // Metadata: same offsets in the host and the device copy.
  const MetaLayout m = meta_layout(L);
  w.meta_bytes = m.total;
  w.meta_host = RS_TRY(HostBuffer::allocate(w.meta_bytes, host_kind, "step metadata"));
  w.meta_device = RS_TRY(DeviceBuffer::allocate(w.meta_bytes, "step metadata"));
  auto views = [&](char* b) {
    return StepMeta{reinterpret_cast<int32_t*>(b + m.tok),
                    reinterpret_cast<int32_t*>(b + m.pos),
                    reinterpret_cast<int32_t*>(b + m.slot),
                    reinterpret_cast<int32_t*>(b + m.ctx),
                    reinterpret_cast<int32_t*>(b + m.bt),
                    reinterpret_cast<int32_t*>(b + m.last),
                    reinterpret_cast<kernels::SamplingSlot*>(b + m.samp)};
  };
  w.host_meta = views(w.meta_host.host<char>());
  w.dev_meta = views(w.meta_device.as<char>());
  const size_t results_bytes = sizeof(kernels::SampleResult) * B;
  w.results = RS_TRY(HostBuffer::allocate(results_bytes, host_kind, "sample results"));
  if (w.results.pinned()) {
    w.sample_out = w.results.device<kernels::SampleResult>();
  } else {
    // Pageable memory is out of the kernels' reach: the sampler writes to
    // the device and the host copies the results back after the step.
    w.results_device = RS_TRY(DeviceBuffer::allocate(results_bytes, "sample results"));
    w.sample_out = w.results_device.as<kernels::SampleResult>();
  }
  return w;
}

}  // namespace ringserve::cuda
