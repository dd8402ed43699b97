// Element types of safetensors files and the scalar conversions the loader
// and quantizer need. Loads go through memcpy because a safetensors data
// section is only guaranteed byte-aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "model/weights.h"

namespace ringserve::model {

enum class DType : uint8_t {
  kBool,
  kU8,
  kI8,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
  kF8E4M3,
  kF8E5M2,
};

// Bytes per element.
size_t dtype_size(DType type) noexcept;

// The safetensors spelling: "BF16", "F32", "I8", ...
std::string_view dtype_name(DType type) noexcept;

// Inverse of dtype_name; nullopt for anything else (case-sensitive, as the
// format is).
std::optional<DType> parse_dtype(std::string_view name) noexcept;

// IEEE binary16 -> binary32, exact (subnormals, inf and NaN included).
float f16_to_float(uint16_t bits) noexcept;

// Reads element `index` of a float-like array (BF16, F16 or F32) as fp32.
// Precondition: type is one of those three.
inline float load_float(DType type, const std::byte* base, size_t index) noexcept {
  switch (type) {
    case DType::kBF16: {
      uint16_t bits;
      std::memcpy(&bits, base + index * 2, 2);
      return bf16_to_float(bits);
    }
    case DType::kF16: {
      uint16_t bits;
      std::memcpy(&bits, base + index * 2, 2);
      return f16_to_float(bits);
    }
    default: {
      float value;
      std::memcpy(&value, base + index * 4, 4);
      return value;
    }
  }
}

inline bool is_float_source(DType type) noexcept {
  return type == DType::kBF16 || type == DType::kF16 || type == DType::kF32;
}

}  // namespace ringserve::model
