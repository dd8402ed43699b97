// write_random_hf_checkpoint (declared in synthetic.h): a Hugging Face layout
// checkpoint of random float weights, streamed through SafetensorsWriter.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "model/layout.h"
#include "model/loader.h"
#include "model/parallel.h"
#include "model/rng.h"
#include "model/safetensors_writer.h"
#include "model/synthetic.h"

namespace ringserve::model {
namespace {

constexpr size_t kChunkBytes = 32u << 20;

void store(DType dtype, std::byte* out, size_t index, float value) {
  switch (dtype) {
    case DType::kBF16: {
      uint16_t b = float_to_bf16(value);
      std::memcpy(out + index * 2, &b, 2);
      break;
    }
    case DType::kF16: {
      // Round to nearest into binary16. The values drawn here are finite and
      // far inside the f16 range, so only normals and subnormals occur.
      uint32_t u;
      std::memcpy(&u, &value, 4);
      uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
      float a = std::fabs(value);
      uint16_t bits = 0;
      if (a >= 6.103515625e-05f) {
        int e;
        float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
        uint32_t mant = static_cast<uint32_t>(std::nearbyint((m * 2.0f - 1.0f) * 1024.0f));
        int exp = e - 1 + 15;
        if (mant == 1024) mant = 0, ++exp;
        bits = exp >= 31 ? 0x7c00 : static_cast<uint16_t>((exp << 10) | mant);
      } else {
        bits = static_cast<uint16_t>(std::nearbyint(a / 5.9604644775390625e-08f));
      }
      bits |= sign;
      std::memcpy(out + index * 2, &bits, 2);
      break;
    }
    default:
      std::memcpy(out + index * 4, &value, 4);
      break;
  }
}

// How a tensor's values are drawn, by its role.
struct Fill {
  float center = 0.0f;
  float half_width = 0.0f;
};

Fill fill_for(const ExpectedTensor& t) {
  if (t.name.ends_with("norm.weight")) return {1.0f, 0.1f};
  if (t.name.ends_with(".bias")) return {0.0f, 0.05f};
  if (t.name == kEmbedName) return {0.0f, 0.02f * std::sqrt(3.0f)};
  return {0.0f, std::sqrt(3.0f / static_cast<float>(t.shape.back()))};
}

}  // namespace

Status write_random_hf_checkpoint(const ModelConfig& config, const std::filesystem::path& out_dir,
                                  uint64_t seed, DType dtype, int threads) {
  RS_TRY_STATUS(config.validate());
  if (!is_float_source(dtype))
    return make_error(Errc::kInvalidArgument, "random checkpoint: dtype {} is not BF16, F16 or F32",
                      dtype_name(dtype));
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return make_error(Errc::kIoError, "{}: {}", out_dir.string(), ec.message());

  auto layout = hf_tensor_layout(config);
  std::vector<TensorDecl> decls;
  for (const auto& t : layout) decls.push_back({t.name, dtype, t.shape});
  auto writer = RS_TRY(SafetensorsWriter::create(out_dir / "model.safetensors", std::move(decls),
                                                 {{"format", "pt"}}));

  const size_t elem = dtype_size(dtype);
  std::vector<std::byte> buffer;
  for (const auto& t : layout) {
    const size_t cols = static_cast<size_t>(t.shape.back());
    const size_t rows = t.shape.size() == 2 ? static_cast<size_t>(t.shape[0]) : 1;
    const size_t rows_per_chunk = std::max<size_t>(1, kChunkBytes / (cols * elem));
    const uint64_t id = name_id(t.name);
    const Fill fill = fill_for(t);
    for (size_t first = 0; first < rows; first += rows_per_chunk) {
      size_t n = std::min(rows_per_chunk, rows - first);
      buffer.resize(n * cols * elem);
      parallel_for(n, threads, 16, [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
          RowRng rng(seed, id, first + r);
          for (size_t c = 0; c < cols; ++c)
            store(dtype, buffer.data(), r * cols + c,
                  fill.center + fill.half_width * rng.uniform_pm1());
        }
      });
      RS_TRY_STATUS(writer.append(buffer));
    }
  }
  RS_TRY_STATUS(writer.finish());

  auto config_path = out_dir / "config.json";
  std::ofstream out(config_path, std::ios::binary | std::ios::trunc);
  out << to_config_json(config);
  out.close();
  if (!out) return make_error(Errc::kIoError, "{}: write failed", config_path.string());
  return {};
}

}  // namespace ringserve::model
