#include "model/quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "model/parallel.h"

namespace ringserve::model {

bool quantize_row(std::span<const float> w, std::span<int8_t> q, float& scale) noexcept {
  float max_abs = 0.0f;
  bool finite = true;
  for (float v : w) {
    finite &= std::isfinite(v);
    max_abs = std::max(max_abs, std::fabs(v));
  }
  if (!finite) return false;
  if (max_abs == 0.0f) {
    scale = 0.0f;
    std::fill(q.begin(), q.end(), int8_t{0});
    return true;
  }
  scale = max_abs / 127.0f;
  // nearbyint rounds half to even under the default FE_TONEAREST mode; the
  // division (not a multiply by 1/scale) keeps exact multiples of scale exact.
  for (size_t i = 0; i < w.size(); ++i) {
    float r = std::nearbyint(w[i] / scale);
    q[i] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
  }
  return true;
}

Status quantize_matrix(DType dtype, const std::byte* src, int rows, int cols, std::span<int8_t> q,
                       std::span<float> scale, int threads) {
  if (!is_float_source(dtype))
    return make_error(Errc::kInvalidArgument, "cannot quantize dtype {} (need BF16, F16 or F32)",
                      dtype_name(dtype));
  if (rows < 0 || cols < 0 || q.size() != static_cast<size_t>(rows) * static_cast<size_t>(cols) ||
      scale.size() != static_cast<size_t>(rows))
    return make_error(Errc::kInternal, "quantize_matrix: output sizes do not match [{}, {}]", rows,
                      cols);
  const size_t elem = dtype_size(dtype);
  std::atomic<int64_t> bad_row{-1};
  parallel_for(static_cast<size_t>(rows), threads, 16, [&](size_t begin, size_t end) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (size_t r = begin; r < end; ++r) {
      const std::byte* base = src + r * static_cast<size_t>(cols) * elem;
      for (size_t c = 0; c < row.size(); ++c) row[c] = load_float(dtype, base, c);
      if (!quantize_row(row, q.subspan(r * row.size(), row.size()), scale[r])) {
        int64_t expected = -1;
        bad_row.compare_exchange_strong(expected, static_cast<int64_t>(r));
      }
    }
  });
  if (bad_row.load() >= 0)
    return make_error(Errc::kCorruptData, "row {} holds a NaN or infinity", bad_row.load());
  return {};
}

Expected<QuantLinear> quantize_linear(const TensorView& tensor, int threads) {
  if (tensor.shape.size() != 2)
    return make_error(Errc::kCorruptData, "{}: expected a matrix, got shape {}", tensor.where(),
                      shape_string(tensor.shape));
  constexpr int64_t kMaxDim = std::numeric_limits<int>::max();
  if (tensor.shape[0] > kMaxDim || tensor.shape[1] > kMaxDim || !is_float_source(tensor.dtype))
    return make_error(Errc::kCorruptData, "{}: {} {} cannot be quantized", tensor.where(),
                      dtype_name(tensor.dtype), shape_string(tensor.shape));
  QuantLinear out;
  out.rows = static_cast<int>(tensor.shape[0]);
  out.cols = static_cast<int>(tensor.shape[1]);
  out.q.resize(static_cast<size_t>(out.rows) * static_cast<size_t>(out.cols));
  out.scale.resize(static_cast<size_t>(out.rows));
  if (auto st = quantize_matrix(tensor.dtype, tensor.bytes.data(), out.rows, out.cols, out.q,
                                out.scale, threads);
      !st)
    return with_context(std::move(st).error(), tensor.where());
  return out;
}

}  // namespace ringserve::model
