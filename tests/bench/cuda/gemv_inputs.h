// Device inputs of the decode GEMVs at the 7B's shapes: `copies` copies of
// one random INT8 weight matrix (rotating over them keeps the matrix the
// next launch reads out of L2), per-row scales, activations for up to 8
// batch rows and an output. Shared by the per-launch and in-graph benchmarks.
#pragma once

#include <cuda_bf16.h>

#include <vector>

#include "bench.h"
#include "gemv_w8a16.h"

namespace ringserve::bench {

struct GemvShape {
  const char* name;
  int rows, cols;
  kernels::GemvEpilogue epi;
};

inline constexpr GemvShape kLayerGemvs[] = {
    {"qkv", 4608, 3584, kernels::GemvEpilogue::kStoreF32},
    {"o", 3584, 3584, kernels::GemvEpilogue::kResidualAddF32},
    {"gate_up", 37888, 3584, kernels::GemvEpilogue::kSiluMulBf16},
    {"down", 3584, 18944, kernels::GemvEpilogue::kResidualAddF32}};
inline constexpr GemvShape kHeadGemv = {"lm_head", 152064, 3584, kernels::GemvEpilogue::kStoreF32};

class GemvInputs {
 public:
  GemvInputs(const GemvShape& s, int copies) : shape_(s) {
    const size_t wbytes = weight_bytes();
    // Random bytes once, copied on the device: the copies only have to be
    // distinct memory, not distinct values.
    for (int i = 0; i < copies; ++i) {
      w_.push_back(dmalloc(wbytes));
      if (i == 0)
        fill_random(w_[0], wbytes, 100);
      else
        check(cudaMemcpy(w_[i], w_[0], wbytes, cudaMemcpyDeviceToDevice), "copy");
    }
    scale_ = dmalloc(4 * static_cast<size_t>(s.rows));
    std::vector<float> hs(s.rows, 0.01f);
    check(cudaMemcpy(scale_, hs.data(), 4 * hs.size(), cudaMemcpyHostToDevice), "scale");
    x_ = dmalloc(2 * 8 * static_cast<size_t>(s.cols));
    fill_random(x_, 2 * 8 * static_cast<size_t>(s.cols), 7);
    out_ = dmalloc(4 * 8 * static_cast<size_t>(s.rows));
    check(cudaMemset(out_, 0, 4 * 8 * static_cast<size_t>(s.rows)), "memset");
  }
  ~GemvInputs() {
    for (void* p : w_) cudaFree(p);
    for (void* p : {scale_, x_, out_}) cudaFree(p);
  }
  GemvInputs(const GemvInputs&) = delete;
  GemvInputs& operator=(const GemvInputs&) = delete;

  const GemvShape& shape() const { return shape_; }
  size_t weight_bytes() const { return static_cast<size_t>(shape_.rows) * shape_.cols; }
  // Bytes one launch reads: the weights and their scales.
  double bytes_read() const { return weight_bytes() + 4.0 * shape_.rows; }
  int copies() const { return static_cast<int>(w_.size()); }
  const void* weights(int copy) const { return w_[copy % w_.size()]; }

  // The arguments of a launch over weight copy `copy` (mod copies()), the
  // weights read as tiled (the engine's layout wherever the shape allows)
  // or as row-major. The bytes are random either way.
  kernels::GemvArgs args(int copy, int batch, bool tiled = true) const {
    kernels::GemvArgs a;
    a.w = static_cast<int8_t*>(w_[copy % w_.size()]);
    a.layout = tiled && kernels::tiled_layout_fits(shape_.rows, shape_.cols)
                   ? kernels::WeightLayout::kTiled16x64
                   : kernels::WeightLayout::kRowMajor;
    a.scale = static_cast<float*>(scale_);
    a.rows = shape_.rows;
    a.cols = shape_.cols;
    a.x = static_cast<__nv_bfloat16*>(x_);
    a.batch = batch;
    a.out = out_;
    a.epilogue = shape_.epi;
    return a;
  }

 private:
  GemvShape shape_;
  std::vector<void*> w_;
  void *scale_ = nullptr, *x_ = nullptr, *out_ = nullptr;
};

}  // namespace ringserve::bench
