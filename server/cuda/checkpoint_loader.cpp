#include "cuda/checkpoint_loader.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>
#include <tuple>
#include <vector>

#include "cuda/checkpoint_stream.h"
#include "cuda_check.h"
#include "model/checkpoint.h"
#include "model/dtype.h"
#include "model/layout.h"
#include "model/loader.h"
#include "model/synthetic.h"
#include "quantize.h"
#include "util/log.h"

namespace ringserve::cuda {
namespace {

using model::TensorView;

// Device staging for one row block of bf16 source rows; the quantized
// output of a block that cannot be written in place goes to scratch of the
// same size.
constexpr size_t kStagingBytes = size_t{128} << 20;

// Where the rows of one source tensor go in a fused linear.
struct RowMap {
  int offset = 0;      // fused row of source row 0 (q, k, v stacked)
  int interleave = 0;  // 0: contiguous; 1 / 2: gate / up rows, packed as the GEMV wants
  int fused(int r) const {
    return interleave == 0 ? offset + r : kernels::packed_gate_row(r) + (interleave - 1) * 16;
  }
};

// One 2-D tensor's destination.
struct Job {
  enum Kind { kLinear, kEmbedding } kind = kLinear;
  int cols = 0;
  char* base = nullptr;  // linear: blob or head base (device or host); embedding: its target
  bool on_host = false;
  LinearSlots slots;
  RowMap map;
  bool also_head = false;  // tied embedding: also the output head
};

class Writer {
 public:
  Writer(const DeviceModel& m, cudaStream_t stream, int8_t* q_scratch, float* scale_scratch)
      : m_(m), stream_(stream), q_scratch_(q_scratch), scale_scratch_(scale_scratch) {}

  Status rows(const Job& job, const StagedRows& block) {
    const int n = static_cast<int>(block.row_end - block.row_begin);
    const auto* src = static_cast<const __nv_bfloat16*>(block.device);
    if (job.kind == Job::kEmbedding) {
      const size_t row_bytes = 2 * static_cast<size_t>(job.cols);
      CUDA_CHECK(cudaMemcpyAsync(job.base + block.row_begin * row_bytes, src, n * row_bytes,
                                 cudaMemcpyDefault, stream_));
      if (job.also_head) {
        Job head;
        head.cols = job.cols;
        head.base = m_.lm_head_target();
        head.slots = m_.lm_head_slots();
        RS_TRY_STATUS(linear(head, src, static_cast<int>(block.row_begin), n));
      }
      return ok();
    }
    return linear(job, src, static_cast<int>(block.row_begin), n);
  }

 private:
  Status linear(const Job& job, const __nv_bfloat16* src, int r0, int n) {
    const size_t cols = job.cols;
    char* q = job.base + job.slots.q;
    char* scale = job.base + job.slots.scale;
    if (!job.on_host && job.map.interleave == 0) {  // straight into place
      const int f = job.map.fused(r0);
      return kernels::quantize_rows_bf16(src, n, job.cols, reinterpret_cast<int8_t*>(q) + f * cols,
                                         reinterpret_cast<float*>(scale) + f, stream_);
    }
    RS_TRY_STATUS(
        kernels::quantize_rows_bf16(src, n, job.cols, q_scratch_, scale_scratch_, stream_));
    if (job.map.interleave == 0) {
      const int f = job.map.fused(r0);
      CUDA_CHECK(cudaMemcpyAsync(q + f * cols, q_scratch_, n * cols, cudaMemcpyDefault, stream_));
      CUDA_CHECK(cudaMemcpyAsync(scale + 4 * static_cast<size_t>(f), scale_scratch_, 4 * n,
                                 cudaMemcpyDefault, stream_));
      return ok();
    }
    // Interleaved: runs of up to 16 rows, one strided copy per kind of run
    // (a partial group at each end, the whole groups in between).
    int r = r0;
    const int end = r0 + n;
    while (r < end) {
      const int in_group = r % 16;
      const int run = std::min(16 - in_group, end - r);
      int groups = 1;
      if (in_group == 0 && run == 16) groups = (end - r) / 16;
      RS_TRY_STATUS(copy_runs(job, q, scale, r - r0, job.map.fused(r), run, groups));
      r += run * groups;
    }
    return ok();
  }

  // `groups` runs of `run` rows: source rows [s + 16g, +run), fused rows
  // [f + 32g, +run).
  Status copy_runs(const Job& job, char* q, char* scale, int s, int f, int run, int groups) {
    const size_t cols = job.cols;
    CUDA_CHECK(cudaMemcpy2DAsync(q + f * cols, 32 * cols, q_scratch_ + s * cols, 16 * cols,
                                 run * cols, groups, cudaMemcpyDefault, stream_));
    CUDA_CHECK(cudaMemcpy2DAsync(scale + 4 * static_cast<size_t>(f), 32 * 4, scale_scratch_ + s,
                                 16 * 4, 4 * static_cast<size_t>(run), groups, cudaMemcpyDefault,
                                 stream_));
    return ok();
  }

  const DeviceModel& m_;
  cudaStream_t stream_;
  int8_t* q_scratch_;
  float* scale_scratch_;
};

// Copies host floats into a target that is device memory or host memory.
Status put(void* dst, bool on_host, const std::vector<float>& v) {
  if (on_host) {
    std::memcpy(dst, v.data(), v.size() * 4);
    return ok();
  }
  CUDA_CHECK(cudaMemcpy(dst, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  return ok();
}

}  // namespace

Expected<std::optional<GpuCheckpoint>> open_gpu_checkpoint(const std::string& spec,
                                                           std::string* why) {
  auto say = [&](std::string text) {
    if (why) *why = std::move(text);
    return std::optional<GpuCheckpoint>();
  };
  if (spec.starts_with(model::kSyntheticPrefix)) return say("synthetic weights");
  std::error_code ec;
  if (!std::filesystem::is_directory(spec, ec)) return say("not a directory");
  GpuCheckpoint ck;
  ck.config = RS_TRY(model::load_config(spec));
  RS_TRY_STATUS(ck.config.validate());
  ck.source = RS_TRY(model::TensorSource::open_dir(spec));
  if (model::is_ringserve_checkpoint(ck.source)) return say("already an INT8 checkpoint");
  for (const auto& t : model::hf_tensor_layout(ck.config)) {
    const TensorView v = RS_TRY(model::expect_tensor(ck.source, t.name, t.shape));
    if (t.shape.size() == 2 && v.dtype != model::DType::kBF16)
      return say(std::string("its matrices are ") + std::string(model::dtype_name(v.dtype)) +
                 ", the GPU quantizer reads bf16");
  }
  return std::optional<GpuCheckpoint>(std::move(ck));
}

Expected<DeviceModel> load_checkpoint_to_device(const GpuCheckpoint& ck, bool resident_bf16,
                                                const WeightPlacement& placement,
                                                cudaStream_t stream, CheckpointLoadStats* stats,
                                                const CheckpointStreamOptions& read) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& c = ck.config;
  const auto& src = ck.source;
  // The layer linears in model::kLayerLinears order (q, k, v, o, gate, up,
  // down): where each one's rows go in the fused blobs.
  const int qd = c.q_dim(), kvd = c.kv_dim(), H = c.hidden_size;
  const auto shapes = model::layer_linear_shapes(c);
  const std::array<RowMap, 7> maps{
      {{0, 0}, {qd, 0}, {qd + kvd, 0}, {0, 0}, {0, 1}, {0, 2}, {0, 0}}};
  const auto slots_of = [](const DeviceModel::Targets& t, size_t i) -> const LinearSlots& {
    return i < 3 ? t.qkv : i == 3 ? t.o : i < 6 ? t.gate_up : t.down;
  };
  auto bias_name = [](int layer, size_t i) {
    return model::layer_prefix(layer) + model::kLayerLinears[i].name + ".bias";
  };
  LinearBiases biases;
  for (int l = 0; l < c.num_layers; ++l) {
    for (size_t i = 0; i < 3; ++i) biases.qkv |= src.find(bias_name(l, i)) != nullptr;
    biases.o |= src.find(bias_name(l, 3)) != nullptr;
  }
  DeviceModel m = RS_TRY(DeviceModel::allocate(c, biases, resident_bf16, false, placement));
  const auto& B = m.blob_layout();
  const auto t_allocated = std::chrono::steady_clock::now();

  // Norms and biases: small, converted on the host from the mapped file. A
  // fused linear's rows without a bias of their own get 0.
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = model::layer_prefix(l);
    RS_TRY_STATUS(put(m.input_norm_target(l), false,
                      RS_TRY(model::load_vector(src, p + "input_layernorm.weight", H))));
    RS_TRY_STATUS(put(m.post_norm_target(l), false,
                      RS_TRY(model::load_vector(src, p + "post_attention_layernorm.weight", H))));
    for (const auto& [first, last, present, slots] :
         {std::tuple{size_t{0}, size_t{3}, biases.qkv, B.qkv},
          std::tuple{size_t{3}, size_t{4}, biases.o, B.o}}) {
      if (!present) continue;
      std::vector<float> bias;
      for (size_t i = first; i < last; ++i) {
        const int rows = shapes[i][0];
        if (src.find(bias_name(l, i))) {
          const auto b = RS_TRY(model::load_vector(src, bias_name(l, i), rows));
          bias.insert(bias.end(), b.begin(), b.end());
        } else {
          bias.resize(bias.size() + rows, 0.0f);
        }
      }
      RS_TRY_STATUS(put(m.layer_blob_target(l) + slots.bias, m.on_host(l), bias));
    }
  }
  RS_TRY_STATUS(
      put(m.final_norm_target(), false, RS_TRY(model::load_vector(src, model::kFinalNormName, H))));

  // Every matrix: its destination, grouped by file in offset order.
  std::map<std::string, Job> jobs;
  auto linear_job = [&](int layer, const LinearSlots& slots, RowMap map, int cols) {
    Job j;
    j.cols = cols;
    j.base = m.layer_blob_target(layer);
    j.on_host = m.on_host(layer);
    j.slots = slots;
    j.map = map;
    return j;
  };
  for (int l = 0; l < c.num_layers; ++l) {
    for (size_t i = 0; i < model::kLayerLinears.size(); ++i)
      jobs[model::layer_prefix(l) + model::kLayerLinears[i].name + ".weight"] =
          linear_job(l, slots_of(B, i), maps[i], shapes[i][1]);
  }
  const bool have_head = src.find(model::kLmHeadName) != nullptr;
  {
    Job e;
    e.kind = Job::kEmbedding;
    e.cols = H;
    e.base = m.embedding_target();
    e.on_host = m.embedding_on_host();
    e.also_head = !have_head;  // tied: the head is the quantized embedding
    jobs[model::kEmbedName] = e;
  }
  if (have_head) {
    Job h;
    h.cols = H;
    h.base = m.lm_head_target();
    h.slots = m.lm_head_slots();
    jobs[model::kLmHeadName] = h;
  }
  const auto t_small = std::chrono::steady_clock::now();
  auto staging = RS_TRY(DeviceBuffer::allocate(kStagingBytes, "load staging"));
  auto q_scratch = RS_TRY(DeviceBuffer::allocate(kStagingBytes / 2, "load scratch"));
  const size_t min_cols = std::min({c.hidden_size, qd, c.intermediate_size});
  auto scale_scratch =
      RS_TRY(DeviceBuffer::allocate(kStagingBytes / 2 / min_cols * 4 + 4096, "load scratch"));
  Writer writer(m, stream, q_scratch.as<int8_t>(), scale_scratch.as<float>());

  CheckpointStreamOptions options = read;
  // Copies out of the page cache scale with threads, and at start-up
  // loading is the machine's only work: every core, a read in flight each.
  const int cores = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  if (options.reader.pread_threads == 0) options.reader.pread_threads = std::min(cores, 16);

  CheckpointLoadStats total;
  double stream_seconds = 0, setup_seconds = 0;
  const auto t_streams = std::chrono::steady_clock::now();
  for (size_t shard = 0; shard < src.shard_count(); ++shard) {
    std::vector<std::pair<const TensorView*, const Job*>> order;
    for (const auto& [name, job] : jobs) {
      const TensorView* v = src.find(name);
      if (v && v->shard == shard) order.push_back({v, &job});
    }
    if (order.empty()) continue;
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.first->file_offset < b.first->file_offset;
    });
    std::vector<io::TensorExtent> extents;
    for (const auto& [v, job] : order)
      extents.push_back({v->file_offset, v->bytes.size(), 2 * static_cast<uint64_t>(job->cols)});
    const auto st = RS_TRY(stream_checkpoint_rows(
        src.shard_path(shard), extents, staging.as(), kStagingBytes, stream,
        [&](const StagedRows& rows, cudaStream_t s) -> Status {
          (void)s;
          return writer.rows(*order[rows.tensor].second, rows);
        },
        options));
    total.bytes += st.bytes;
    total.method = io::method_name(st.method);
    stream_seconds += st.seconds;
    setup_seconds += st.setup_seconds;
  }
  const auto t_streamed = std::chrono::steady_clock::now();
  RS_TRY_STATUS(m.finish(!have_head && c.tie_word_embeddings, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto t_end = std::chrono::steady_clock::now();
  total.seconds = std::chrono::duration<double>(t_end - t0).count();
  using Seconds = std::chrono::duration<double>;
  log::get("model")->info(
      "load phases: device allocation {:.3f} s, norms and biases {:.3f} s, staging {:.3f} s, "
      "slots {:.3f} s, streaming {:.3f} s, finishing {:.3f} s",
      Seconds(t_allocated - t0).count(), Seconds(t_small - t_allocated).count(),
      Seconds(t_streams - t_small).count(), setup_seconds, stream_seconds,
      Seconds(t_end - t_streamed).count());
  log::get("model")->info(
      "{}: {:.2f} GB read and quantized on the GPU in {:.2f} s ({:.1f} GB/s, {})",
      src.description(), total.bytes / 1e9, total.seconds,
      total.seconds > 0 ? total.bytes / total.seconds / 1e9 : 0.0, total.method);
  if (stats) *stats = total;
  return m;
}

}  // namespace ringserve::cuda
