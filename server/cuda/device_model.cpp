#include "cuda/device_model.h"

#include <algorithm>
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

  // Copies `bytes` to dst (device memory, or host memory when dst_on_host:
  // then filled in place); fill(offset, out, n) writes source bytes
  // [offset, offset + n) into out.
  Status copy(char* dst, bool dst_on_host, size_t bytes,
              const std::function<void(size_t, char*, size_t)>& fill) {
    if (dst_on_host) {
      for (size_t off = 0; off < bytes; off += kChunk)
        fill(off, dst + off, std::min(kChunk, bytes - off));
      return ok();
    }
    for (size_t off = 0; off < bytes; off += kChunk) {
      const size_t n = std::min(kChunk, bytes - off);
      CUDA_CHECK(cudaEventSynchronize(done_[cur_]));  // the staging buffer is free again
      fill(off, staging_[cur_].host<char>(), n);
      CUDA_CHECK(
          cudaMemcpyAsync(dst + off, staging_[cur_].host(), n, cudaMemcpyHostToDevice, stream_));
      CUDA_CHECK(cudaEventRecord(done_[cur_], stream_));
      cur_ ^= 1;
    }
    bytes_ += bytes;
    return ok();
  }
  Status copy(char* dst, bool dst_on_host, const void* src, size_t bytes) {
    return copy(dst, dst_on_host, bytes, [src](size_t off, char* out, size_t n) {
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

Status check_weights(const model::ModelWeights& w) {
  const auto& c = w.config;
  const int H = c.hidden_size, I = c.intermediate_size;
  if (static_cast<int>(w.layers.size()) != c.num_layers)
    return make_error(Errc::kCorruptData, "{} layers in the weights, {} in the config",
                      w.layers.size(), c.num_layers);
  if (w.embed_tokens.rows != c.vocab_size || w.embed_tokens.cols != H ||
      w.embed_tokens.bf16.size() != static_cast<size_t>(c.vocab_size) * H)
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
  return ok();
}

LinearBiases biases_of(const model::ModelWeights& w) {
  LinearBiases b;
  for (const auto& L : w.layers) {
    b.qkv |= !L.q_proj.bias.empty() || !L.k_proj.bias.empty() || !L.v_proj.bias.empty();
    b.o |= !L.o_proj.bias.empty();
    b.gate_up |= !L.gate_proj.bias.empty() || !L.up_proj.bias.empty();
    b.down |= !L.down_proj.bias.empty();
  }
  b.lm_head = !w.lm_head.bias.empty();
  return b;
}

LinearSlots reserve_linear(Arena& a, int rows, int cols, bool bias) {
  LinearSlots s;
  s.q = a.reserve(static_cast<size_t>(rows) * cols);
  s.scale = a.reserve(sizeof(float) * rows);
  if (bias) s.bias = a.reserve(sizeof(float) * rows);
  return s;
}

void point(DeviceLinear& l, const char* base, const LinearSlots& s) {
  l.q = reinterpret_cast<const int8_t*>(base + s.q);
  l.scale = reinterpret_cast<const float*>(base + s.scale);
  l.bias = s.bias == SIZE_MAX ? nullptr : reinterpret_cast<const float*>(base + s.bias);
}

void shape(DeviceLinear& l, int rows, int cols, kernels::GemvEpilogue epi,
           kernels::WeightLayout layout) {
  l.rows = rows;
  l.cols = cols;
  l.layout = kernels::tiled_layout_fits(rows, cols) ? layout : kernels::WeightLayout::kRowMajor;
  l.gemv.single = l.gemv.multi = kernels::default_gemv_config(rows, cols, epi);
}

}  // namespace

size_t bf16_copy_bytes(const model::ModelConfig& c) {
  const size_t qkv = static_cast<size_t>(c.q_dim() + 2 * c.kv_dim()) * c.hidden_size;
  const size_t per_layer = qkv + static_cast<size_t>(c.hidden_size) * c.q_dim() +
                           3 * static_cast<size_t>(c.intermediate_size) * c.hidden_size;
  return per_layer * c.num_layers * 2;
}

Expected<DeviceModel> DeviceModel::allocate(const model::ModelConfig& c, const LinearBiases& biases,
                                            bool resident_bf16, bool head_bf16,
                                            const WeightPlacement& placement) {
  RS_TRY_STATUS(c.validate());
  const int H = c.hidden_size, I = c.intermediate_size, QKV = c.q_dim() + 2 * c.kv_dim();
  if (I % 16 != 0)
    return make_error(Errc::kUnsupported, "intermediate_size {} is not a multiple of 16", I);
  DeviceModel m;
  m.config_ = c;
  m.biases_ = biases;
  m.device_layers_ = std::clamp(placement.device_layers, 0, c.num_layers);
  // The bf16 prefill copies only make sense with every layer on the GPU.
  m.resident_bf16_ = resident_bf16 && m.device_layers_ == c.num_layers;

  Arena blob;
  m.blob_.qkv = reserve_linear(blob, QKV, H, biases.qkv);
  m.blob_.o = reserve_linear(blob, H, c.q_dim(), biases.o);
  m.blob_.gate_up = reserve_linear(blob, 2 * I, H, biases.gate_up);
  m.blob_.down = reserve_linear(blob, H, I, biases.down);
  m.blob_bytes_ = align(blob.size());

  Arena arena;
  const int L = c.num_layers;
  m.layer_blob_off_.assign(L, SIZE_MAX);
  m.in_norm_off_.resize(L);
  m.post_norm_off_.resize(L);
  for (int l = 0; l < L; ++l) {
    if (l < m.device_layers_) m.layer_blob_off_[l] = arena.reserve(m.blob_bytes_);
    m.in_norm_off_[l] = arena.reserve(sizeof(float) * H);
    m.post_norm_off_[l] = arena.reserve(sizeof(float) * H);
  }
  if (m.resident_bf16_) {
    m.bf16_.resize(L);
    for (int l = 0; l < L; ++l) {
      auto& t = m.bf16_[l];
      t.qkv.q_bf16 = arena.reserve(2 * static_cast<size_t>(QKV) * H);
      t.o.q_bf16 = arena.reserve(2 * static_cast<size_t>(H) * c.q_dim());
      t.gate_up.q_bf16 = arena.reserve(4 * static_cast<size_t>(I) * H);
      t.down.q_bf16 = arena.reserve(2 * static_cast<size_t>(H) * I);
    }
  }
  const size_t embed_bytes = 2 * static_cast<size_t>(c.vocab_size) * H;
  if (!placement.embedding_on_host) m.embed_off_ = arena.reserve(embed_bytes);
  m.final_norm_off_ = arena.reserve(sizeof(float) * H);
  m.head_ = reserve_linear(arena, c.vocab_size, H, biases.lm_head);
  if (head_bf16) m.head_bf16_off_ = arena.reserve(embed_bytes);

  m.storage_ = RS_TRY(DeviceBuffer::allocate(arena.size(), "model weights"));
  const int host_layers = L - m.device_layers_;
  if (host_layers > 0)
    m.host_layers_ = RS_TRY(HostBuffer::allocate(m.blob_bytes_ * host_layers, placement.host_layers,
                                                 "offloaded layers"));
  if (placement.embedding_on_host)
    m.host_embed_ =
        RS_TRY(HostBuffer::allocate(embed_bytes, HostMemory::kPinnedMapped, "token embedding"));

  char* base = m.storage_.as<char>();
  m.layers_.resize(L);
  for (int l = 0; l < L; ++l) {
    DeviceLayer& D = m.layers_[l];
    D.input_norm = reinterpret_cast<const float*>(base + m.in_norm_off_[l]);
    D.post_attention_norm = reinterpret_cast<const float*>(base + m.post_norm_off_[l]);
    shape(D.qkv, QKV, H, kernels::GemvEpilogue::kStoreF32, placement.gemv_layout);
    shape(D.o, H, c.q_dim(), kernels::GemvEpilogue::kStoreF32, placement.gemv_layout);
    shape(D.gate_up, 2 * I, H, kernels::GemvEpilogue::kSiluMulBf16, placement.gemv_layout);
    shape(D.down, H, I, kernels::GemvEpilogue::kStoreF32, placement.gemv_layout);
    if (l < m.device_layers_) {
      m.bind_layer(l, base + m.layer_blob_off_[l]);
    } else if (const void* mapped = m.host_blob_device(l)) {
      m.bind_layer(l, mapped);  // until the engine binds it to a ring slot
    }
    if (m.resident_bf16_) {
      const auto& t = m.bf16_[l];
      D.qkv.q_bf16 = reinterpret_cast<const __nv_bfloat16*>(base + t.qkv.q_bf16);
      D.o.q_bf16 = reinterpret_cast<const __nv_bfloat16*>(base + t.o.q_bf16);
      D.gate_up.q_bf16 = reinterpret_cast<const __nv_bfloat16*>(base + t.gate_up.q_bf16);
      D.down.q_bf16 = reinterpret_cast<const __nv_bfloat16*>(base + t.down.q_bf16);
    }
  }
  m.embed_ = placement.embedding_on_host
                 ? m.host_embed_.device<const __nv_bfloat16>()
                 : reinterpret_cast<const __nv_bfloat16*>(base + m.embed_off_);
  m.final_norm_ = reinterpret_cast<const float*>(base + m.final_norm_off_);
  shape(m.lm_head_, c.vocab_size, H, kernels::GemvEpilogue::kStoreF32, placement.gemv_layout);
  point(m.lm_head_, base, m.head_);
  return m;
}

const char* DeviceModel::host_blob(int layer) const {
  if (!on_host(layer) || layer >= config_.num_layers) return nullptr;
  return host_layers_.host<const char>() +
         static_cast<size_t>(layer - device_layers_) * blob_bytes_;
}

const void* DeviceModel::host_blob_device(int layer) const {
  if (!on_host(layer) || layer >= config_.num_layers || !host_layers_.pinned()) return nullptr;
  return host_layers_.device<const char>() +
         static_cast<size_t>(layer - device_layers_) * blob_bytes_;
}

void DeviceModel::bind_layer(int layer, const void* device) {
  const char* b = static_cast<const char*>(device);
  DeviceLayer& D = layers_[layer];
  point(D.qkv, b, blob_.qkv);
  point(D.o, b, blob_.o);
  point(D.gate_up, b, blob_.gate_up);
  point(D.down, b, blob_.down);
}

char* DeviceModel::layer_blob_target(int layer) const {
  if (on_host(layer)) return const_cast<char*>(host_blob(layer));
  return storage_.as<char>() + layer_blob_off_[layer];
}
float* DeviceModel::input_norm_target(int layer) const {
  return reinterpret_cast<float*>(storage_.as<char>() + in_norm_off_[layer]);
}
float* DeviceModel::post_norm_target(int layer) const {
  return reinterpret_cast<float*>(storage_.as<char>() + post_norm_off_[layer]);
}
char* DeviceModel::embedding_target() const {
  return embedding_on_host() ? host_embed_.host<char>() : storage_.as<char>() + embed_off_;
}
float* DeviceModel::final_norm_target() const {
  return reinterpret_cast<float*>(storage_.as<char>() + final_norm_off_);
}
char* DeviceModel::lm_head_target() const {
  return storage_.as<char>();
}
__nv_bfloat16* DeviceModel::lm_head_bf16_target() const {
  return head_bf16_off_ == SIZE_MAX
             ? nullptr
             : reinterpret_cast<__nv_bfloat16*>(storage_.as<char>() + head_bf16_off_);
}

Status DeviceModel::finish(bool tied_head, cudaStream_t stream) {
  if (resident_bf16_) {
    for (auto& D : layers_) {
      for (DeviceLinear* l : {&D.qkv, &D.o, &D.gate_up, &D.down})
        RS_TRY_STATUS(kernels::int8_to_bf16(l->q, const_cast<__nv_bfloat16*>(l->q_bf16),
                                            static_cast<size_t>(l->rows) * l->cols, stream));
    }
  }
  RS_TRY_STATUS(tile_weights(stream));
  if (head_bf16_off_ != SIZE_MAX) {
    lm_head_bf16_ = lm_head_bf16_target();
  } else if (tied_head && !embedding_on_host()) {
    // Tied: the embedding is the unquantized head. Not when the embedding
    // is in host memory: every step would read all of it across the link,
    // so the INT8 head serves instead.
    lm_head_bf16_ = embed_;
  }
  return ok();
}

Status DeviceModel::tile_weights(cudaStream_t stream) {
  using kernels::WeightLayout;
  struct Part {
    size_t offset;  // of q in a layer blob
    const DeviceLinear* shape;
  };
  std::vector<Part> blob_parts;
  if (!layers_.empty()) {
    const DeviceLayer& L0 = layers_[0];
    blob_parts = {{blob_.qkv.q, &L0.qkv},
                  {blob_.o.q, &L0.o},
                  {blob_.gate_up.q, &L0.gate_up},
                  {blob_.down.q, &L0.down}};
  }
  std::erase_if(blob_parts,
                [](const Part& p) { return p.shape->layout != WeightLayout::kTiled16x64; });
  const bool head = lm_head_.layout == WeightLayout::kTiled16x64;
  if (blob_parts.empty() && !head) return ok();

  // On the GPU: out of place into scratch, whole 16-row blocks at a time,
  // then back (tiling moves bytes only within a 16-row block).
  constexpr size_t kScratchBytes = size_t{16} << 20;
  DeviceBuffer scratch;
  auto tile_on_gpu = [&](char* q, const DeviceLinear& l) -> Status {
    const size_t block_bytes = static_cast<size_t>(kernels::kTileRows) * l.cols;
    if (scratch.bytes() == 0)
      scratch = RS_TRY(DeviceBuffer::allocate(std::max(kScratchBytes, block_bytes), "retiling"));
    const int step = static_cast<int>(scratch.bytes() / block_bytes) * kernels::kTileRows;
    for (int r0 = 0; r0 < l.rows; r0 += step) {
      const int n = std::min(step, l.rows - r0);
      char* src = q + static_cast<size_t>(r0) * l.cols;
      RS_TRY_STATUS(kernels::tile_int8_rows(reinterpret_cast<const int8_t*>(src),
                                            scratch.as<int8_t>(), n, l.cols, stream));
      CUDA_CHECK(cudaMemcpyAsync(src, scratch.as(), static_cast<size_t>(n) * l.cols,
                                 cudaMemcpyDeviceToDevice, stream));
    }
    return ok();
  };
  // Host-side blobs may still be the target of copies on `stream` (the
  // checkpoint loader quantizes on the GPU and copies back).
  if (device_layers_ < config_.num_layers && !blob_parts.empty())
    CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int l = 0; l < config_.num_layers; ++l) {
    char* blob = layer_blob_target(l);
    for (const Part& p : blob_parts) {
      if (on_host(l)) {
        kernels::retile_rows_host(reinterpret_cast<int8_t*>(blob + p.offset), p.shape->rows,
                                  p.shape->cols, true);
      } else {
        RS_TRY_STATUS(tile_on_gpu(blob + p.offset, *p.shape));
      }
    }
  }
  if (head) RS_TRY_STATUS(tile_on_gpu(lm_head_target() + head_.q, lm_head_));
  // The scratch is freed on return: wait for the work that uses it.
  if (scratch.bytes() > 0) CUDA_CHECK(cudaStreamSynchronize(stream));
  return ok();
}

Expected<DeviceModel> DeviceModel::upload(const model::ModelWeights& w, bool resident_bf16,
                                          const WeightPlacement& placement, cudaStream_t stream,
                                          UploadStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& c = w.config;
  RS_TRY_STATUS(c.validate());
  RS_TRY_STATUS(check_weights(w));
  const bool head_bf16 =
      w.lm_head_bf16.rows == c.vocab_size && w.lm_head_bf16.cols == c.hidden_size &&
      w.lm_head_bf16.bf16.size() == static_cast<size_t>(c.vocab_size) * c.hidden_size;
  DeviceModel m = RS_TRY(allocate(c, biases_of(w), resident_bf16, head_bf16, placement));
  auto up = RS_TRY(Uploader::create(stream));

  // Writes the row-concatenation of `parts` (int8, scales, biases) into one
  // fused linear at `base` + slots; interleave16 packs [gate 16 | up 16].
  auto upload_fused = [&](char* base, bool on_host, const LinearSlots& s,
                          std::vector<const model::QuantLinear*> parts,
                          bool interleave16) -> Status {
    const int cols = parts[0]->cols;
    int rows = 0;
    for (auto* p : parts) rows += p->rows;
    auto source_row = [&](int r) -> std::pair<const model::QuantLinear*, int> {
      if (interleave16) {
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
        base + s.q, on_host, static_cast<size_t>(rows) * row_bytes,
        [&](size_t off, char* dst, size_t n) {
          size_t done = 0;  // chunks are whole rows except possibly the last
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
    for (int r = 0; r < rows; ++r) {
      auto [p, pr] = source_row(r);
      scale[r] = p->scale[pr];
      if (!p->bias.empty()) bias[r] = p->bias[pr];
    }
    RS_TRY_STATUS(up.copy(base + s.scale, on_host, scale.data(), sizeof(float) * rows));
    if (s.bias != SIZE_MAX)
      RS_TRY_STATUS(up.copy(base + s.bias, on_host, bias.data(), sizeof(float) * rows));
    return ok();
  };

  const int H = c.hidden_size;
  const auto& B = m.blob_layout();
  for (int l = 0; l < c.num_layers; ++l) {
    const auto& L = w.layers[l];
    RS_TRY_STATUS(up.copy(reinterpret_cast<char*>(m.input_norm_target(l)), false,
                          L.input_norm.data(), sizeof(float) * H));
    RS_TRY_STATUS(up.copy(reinterpret_cast<char*>(m.post_norm_target(l)), false,
                          L.post_attention_norm.data(), sizeof(float) * H));
    char* blob = m.layer_blob_target(l);
    const bool host = m.on_host(l);
    RS_TRY_STATUS(upload_fused(blob, host, B.qkv, {&L.q_proj, &L.k_proj, &L.v_proj}, false));
    RS_TRY_STATUS(upload_fused(blob, host, B.o, {&L.o_proj}, false));
    RS_TRY_STATUS(upload_fused(blob, host, B.gate_up, {&L.gate_proj, &L.up_proj}, true));
    RS_TRY_STATUS(upload_fused(blob, host, B.down, {&L.down_proj}, false));
  }
  RS_TRY_STATUS(up.copy(m.embedding_target(), m.embedding_on_host(), w.embed_tokens.bf16.data(),
                        w.embed_tokens.bf16.size() * 2));
  RS_TRY_STATUS(up.copy(reinterpret_cast<char*>(m.final_norm_target()), false, w.final_norm.data(),
                        sizeof(float) * H));
  RS_TRY_STATUS(upload_fused(m.lm_head_target(), false, m.lm_head_slots(), {&w.lm_head}, false));
  if (head_bf16)
    RS_TRY_STATUS(up.copy(reinterpret_cast<char*>(m.lm_head_bf16_target()), false,
                          w.lm_head_bf16.bf16.data(), w.lm_head_bf16.bf16.size() * 2));
  RS_TRY_STATUS(m.finish(c.tie_word_embeddings, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (stats) {
    stats->bytes = up.bytes();
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return m;
}

}  // namespace ringserve::cuda
