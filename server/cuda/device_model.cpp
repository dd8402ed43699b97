#include "cuda/device_model.h"

#include <chrono>
#include <cstring>
#include <functional>

#include "cuda_check.h"
#include "gemv_w8a16.h"
#include "quantize.h"

namespace ringserve::cuda {
namespace {

// Host-to-device upload through two pinned staging buffers: while the GPU
// copies one chunk the host packs the next, so packing (the gate/up
// interleave, concatenations) overlaps the PCIe transfer.
class Uploader {
 public:
  static constexpr size_t kChunk = 64u << 20;

  static Expected<Uploader> create(cudaStream_t stream) {
    Uploader u;
    u.stream_ = stream;
    for (int i = 0; i < 2; ++i) {
      u.staging_[i] = RS_TRY(PinnedBuffer::allocate(kChunk, "upload staging"));
      CUDA_CHECK(cudaEventCreateWithFlags(&u.done_[i], cudaEventDisableTiming));
    }
    return u;
  }
  Uploader() = default;
  Uploader(Uploader&& o) noexcept : stream_(o.stream_), cur_(o.cur_), bytes_(o.bytes_) {
    for (int i = 0; i < 2; ++i) {
      staging_[i] = std::move(o.staging_[i]);
      done_[i] = o.done_[i];
      o.done_[i] = nullptr;
    }
  }
  ~Uploader() {
    for (auto e : done_)
      if (e) cudaEventDestroy(e);
  }

  // Copies `bytes` to dst; fill(offset, out, n) writes source bytes
  // [offset, offset + n) into out.
  Status copy(void* dst, size_t bytes, const std::function<void(size_t, char*, size_t)>& fill) {
    for (size_t off = 0; off < bytes; off += kChunk) {
      const size_t n = std::min(kChunk, bytes - off);
      CUDA_CHECK(cudaEventSynchronize(done_[cur_]));  // the staging buffer is free again
      fill(off, staging_[cur_].host<char>(), n);
      CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + off, staging_[cur_].host(), n,
                                 cudaMemcpyHostToDevice, stream_));
      CUDA_CHECK(cudaEventRecord(done_[cur_], stream_));
      cur_ ^= 1;
    }
    bytes_ += bytes;
    return ok();
  }
  Status copy(void* dst, const void* src, size_t bytes) {
    return copy(dst, bytes, [src](size_t off, char* out, size_t n) {
      std::memcpy(out, static_cast<const char*>(src) + off, n);
    });
  }
  size_t bytes() const { return bytes_; }

 private:
  cudaStream_t stream_ = nullptr;
  PinnedBuffer staging_[2];
  cudaEvent_t done_[2] = {nullptr, nullptr};
  int cur_ = 0;
  size_t bytes_ = 0;
};

// Offsets of every tensor inside the single weight allocation.
struct LinearSlots {
  size_t q, scale, bias, q_bf16;
};

size_t align(size_t v) {
  return (v + 255) / 256 * 256;
}

Status check_linear(const model::QuantLinear& l, int rows, int cols, const char* name, int layer) {
  if (l.rows != rows || l.cols != cols || l.q.size() != static_cast<size_t>(rows) * cols ||
      l.scale.size() != static_cast<size_t>(rows) ||
      (!l.bias.empty() && l.bias.size() != static_cast<size_t>(rows)))
    return make_error(Errc::kCorruptData, "layer {} {}: expected [{}, {}], got [{}, {}]", layer,
                      name, rows, cols, l.rows, l.cols);
  return ok();
}

}  // namespace

size_t bf16_copy_bytes(const model::ModelConfig& c) {
  const size_t qkv = static_cast<size_t>(c.q_dim() + 2 * c.kv_dim()) * c.hidden_size;
  const size_t per_layer = qkv + static_cast<size_t>(c.hidden_size) * c.q_dim() +
                           3 * static_cast<size_t>(c.intermediate_size) * c.hidden_size;
  return per_layer * c.num_layers * 2;
}

Expected<DeviceModel> DeviceModel::upload(const model::ModelWeights& w, bool resident_bf16,
                                          cudaStream_t stream, UploadStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& c = w.config;
  RS_TRY_STATUS(c.validate());
  const int H = c.hidden_size, I = c.intermediate_size, QKV = c.q_dim() + 2 * c.kv_dim();
  if (I % 16 != 0)
    return make_error(Errc::kUnsupported, "intermediate_size {} is not a multiple of 16", I);
  if (static_cast<int>(w.layers.size()) != c.num_layers)
    return make_error(Errc::kCorruptData, "{} layers in the weights, {} in the config",
                      w.layers.size(), c.num_layers);
  if (w.embed_tokens.rows != c.vocab_size || w.embed_tokens.cols != H)
    return make_error(Errc::kCorruptData, "embedding shape [{}, {}]", w.embed_tokens.rows,
                      w.embed_tokens.cols);
  RS_TRY_STATUS(check_linear(w.lm_head, c.vocab_size, H, "lm_head", -1));
  for (int l = 0; l < c.num_layers; ++l) {
    const auto& L = w.layers[l];
    RS_TRY_STATUS(check_linear(L.q_proj, c.q_dim(), H, "q_proj", l));
    RS_TRY_STATUS(check_linear(L.k_proj, c.kv_dim(), H, "k_proj", l));
    RS_TRY_STATUS(check_linear(L.v_proj, c.kv_dim(), H, "v_proj", l));
    RS_TRY_STATUS(check_linear(L.o_proj, H, c.q_dim(), "o_proj", l));
    RS_TRY_STATUS(check_linear(L.gate_proj, I, H, "gate_proj", l));
    RS_TRY_STATUS(check_linear(L.up_proj, I, H, "up_proj", l));
    RS_TRY_STATUS(check_linear(L.down_proj, H, I, "down_proj", l));
    if (L.input_norm.size() != static_cast<size_t>(H) ||
        L.post_attention_norm.size() != static_cast<size_t>(H))
      return make_error(Errc::kCorruptData, "layer {}: norm weights of the wrong size", l);
  }
  if (w.final_norm.size() != static_cast<size_t>(H))
    return make_error(Errc::kCorruptData, "final norm of the wrong size");
  const bool head_bf16 = w.lm_head_bf16.rows == c.vocab_size && w.lm_head_bf16.cols == H &&
                         w.lm_head_bf16.bf16.size() == static_cast<size_t>(c.vocab_size) * H;
  const bool head_tied = !head_bf16 && c.tie_word_embeddings;

  // Layout pass.
  Arena arena;
  auto linear_slots = [&](int rows, int cols, bool bias) {
    LinearSlots s{};
    s.q = arena.reserve(static_cast<size_t>(rows) * cols);
    s.scale = arena.reserve(sizeof(float) * rows);
    s.bias = bias ? arena.reserve(sizeof(float) * rows) : SIZE_MAX;
    s.q_bf16 = resident_bf16 ? arena.reserve(2 * static_cast<size_t>(rows) * cols) : SIZE_MAX;
    return s;
  };
  struct LayerSlots {
    size_t in_norm, post_norm;
    LinearSlots qkv, o, gate_up, down;
  };
  std::vector<LayerSlots> ls(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const auto& L = w.layers[l];
    const bool qkv_bias =
        !L.q_proj.bias.empty() || !L.k_proj.bias.empty() || !L.v_proj.bias.empty();
    ls[l].in_norm = arena.reserve(sizeof(float) * H);
    ls[l].post_norm = arena.reserve(sizeof(float) * H);
    ls[l].qkv = linear_slots(QKV, H, qkv_bias);
    ls[l].o = linear_slots(H, c.q_dim(), !L.o_proj.bias.empty());
    ls[l].gate_up = linear_slots(2 * I, H, !L.gate_proj.bias.empty() || !L.up_proj.bias.empty());
    ls[l].down = linear_slots(H, I, !L.down_proj.bias.empty());
  }
  const size_t embed_off = arena.reserve(2 * static_cast<size_t>(c.vocab_size) * H);
  const size_t final_norm_off = arena.reserve(sizeof(float) * H);
  const bool saved = resident_bf16;
  resident_bf16 = false;  // lm_head never runs through cuBLAS in int8 form
  const LinearSlots head = linear_slots(c.vocab_size, H, !w.lm_head.bias.empty());
  resident_bf16 = saved;
  const size_t head_bf16_off =
      head_bf16 ? arena.reserve(2 * static_cast<size_t>(c.vocab_size) * H) : SIZE_MAX;
  // bf16 staging for the resident copy: int8 goes up once, the GPU converts.
  DeviceModel m;
  m.config_ = c;
  m.resident_bf16_ = resident_bf16;
  m.storage_ = RS_TRY(DeviceBuffer::allocate(arena.size(), "model weights"));
  char* base = m.storage_.as<char>();
  auto at = [&](size_t off) { return off == SIZE_MAX ? nullptr : base + off; };

  auto up = RS_TRY(Uploader::create(stream));

  // Uploads the row-concatenation of `parts` (int8 and scales and biases)
  // into one fused linear.
  auto upload_fused = [&](const LinearSlots& s, std::vector<const model::QuantLinear*> parts,
                          bool interleave16, DeviceLinear& out) -> Status {
    const int cols = parts[0]->cols;
    int rows = 0;
    for (auto* p : parts) rows += p->rows;
    // Row r of the fused matrix comes from part / row:
    auto source_row = [&](int r) -> std::pair<const model::QuantLinear*, int> {
      if (interleave16) {  // [gate 16 | up 16] groups
        const int group = r / 32, within = r % 32;
        return {parts[within / 16], group * 16 + within % 16};
      }
      for (auto* p : parts) {
        if (r < p->rows) return {p, r};
        r -= p->rows;
      }
      return {parts.back(), 0};
    };
    const size_t row_bytes = cols;
    RS_TRY_STATUS(up.copy(
        at(s.q), static_cast<size_t>(rows) * row_bytes, [&](size_t off, char* dst, size_t n) {
          // chunks are whole rows except possibly the last
          size_t done = 0;
          while (done < n) {
            const size_t pos = off + done;
            const int r = static_cast<int>(pos / row_bytes);
            const size_t in_row = pos % row_bytes;
            const size_t take = std::min(row_bytes - in_row, n - done);
            auto [p, pr] = source_row(r);
            std::memcpy(dst + done, p->q.data() + static_cast<size_t>(pr) * cols + in_row, take);
            done += take;
          }
        }));
    std::vector<float> scale(rows), bias(rows, 0.0f);
    bool any_bias = false;
    for (int r = 0; r < rows; ++r) {
      auto [p, pr] = source_row(r);
      scale[r] = p->scale[pr];
      if (!p->bias.empty()) {
        bias[r] = p->bias[pr];
        any_bias = true;
      }
    }
    RS_TRY_STATUS(up.copy(at(s.scale), scale.data(), sizeof(float) * rows));
    if (s.bias != SIZE_MAX) RS_TRY_STATUS(up.copy(at(s.bias), bias.data(), sizeof(float) * rows));
    out.q = reinterpret_cast<const int8_t*>(at(s.q));
    out.scale = reinterpret_cast<const float*>(at(s.scale));
    out.bias =
        (s.bias != SIZE_MAX && any_bias) ? reinterpret_cast<const float*>(at(s.bias)) : nullptr;
    out.rows = rows;
    out.cols = cols;
    out.gemv = kernels::default_gemv_config(
        rows, cols,
        interleave16 ? kernels::GemvEpilogue::kSiluMulBf16 : kernels::GemvEpilogue::kStoreF32);
    if (s.q_bf16 != SIZE_MAX) {
      auto* dst = reinterpret_cast<__nv_bfloat16*>(at(s.q_bf16));
      RS_TRY_STATUS(kernels::int8_to_bf16(out.q, dst, static_cast<size_t>(rows) * cols, stream));
      out.q_bf16 = dst;
    }
    return ok();
  };

  m.layers_.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const auto& L = w.layers[l];
    auto& D = m.layers_[l];
    RS_TRY_STATUS(up.copy(at(ls[l].in_norm), L.input_norm.data(), sizeof(float) * H));
    RS_TRY_STATUS(up.copy(at(ls[l].post_norm), L.post_attention_norm.data(), sizeof(float) * H));
    D.input_norm = reinterpret_cast<const float*>(at(ls[l].in_norm));
    D.post_attention_norm = reinterpret_cast<const float*>(at(ls[l].post_norm));
    RS_TRY_STATUS(upload_fused(ls[l].qkv, {&L.q_proj, &L.k_proj, &L.v_proj}, false, D.qkv));
    RS_TRY_STATUS(upload_fused(ls[l].o, {&L.o_proj}, false, D.o));
    RS_TRY_STATUS(upload_fused(ls[l].gate_up, {&L.gate_proj, &L.up_proj}, true, D.gate_up));
    RS_TRY_STATUS(upload_fused(ls[l].down, {&L.down_proj}, false, D.down));
  }
  RS_TRY_STATUS(up.copy(at(embed_off), w.embed_tokens.bf16.data(), w.embed_tokens.bf16.size() * 2));
  m.embed_ = reinterpret_cast<const __nv_bfloat16*>(at(embed_off));
  RS_TRY_STATUS(up.copy(at(final_norm_off), w.final_norm.data(), sizeof(float) * H));
  m.final_norm_ = reinterpret_cast<const float*>(at(final_norm_off));
  RS_TRY_STATUS(upload_fused(head, {&w.lm_head}, false, m.lm_head_));
  if (head_bf16) {
    RS_TRY_STATUS(
        up.copy(at(head_bf16_off), w.lm_head_bf16.bf16.data(), w.lm_head_bf16.bf16.size() * 2));
    m.lm_head_bf16_ = reinterpret_cast<const __nv_bfloat16*>(at(head_bf16_off));
  } else if (head_tied) {
    m.lm_head_bf16_ = m.embed_;
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (stats) {
    stats->bytes = up.bytes();
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return m;
}

}  // namespace ringserve::cuda
