#include "model/dtype.h"

#include <array>

namespace ringserve::model {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, 15> kTypes{{
    {DType::kBool, "BOOL", 1},
    {DType::kU8, "U8", 1},
    {DType::kI8, "I8", 1},
    {DType::kI16, "I16", 2},
    {DType::kU16, "U16", 2},
    {DType::kF16, "F16", 2},
    {DType::kBF16, "BF16", 2},
    {DType::kI32, "I32", 4},
    {DType::kU32, "U32", 4},
    {DType::kF32, "F32", 4},
    {DType::kF64, "F64", 8},
    {DType::kI64, "I64", 8},
    {DType::kU64, "U64", 8},
    {DType::kF8E4M3, "F8_E4M3", 1},
    {DType::kF8E5M2, "F8_E5M2", 1},
}};

}  // namespace

size_t dtype_size(DType type) noexcept {
  return kTypes[static_cast<size_t>(type)].size;
}

std::string_view dtype_name(DType type) noexcept {
  return kTypes[static_cast<size_t>(type)].name;
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  for (const auto& t : kTypes) {
    if (t.name == name) return t.type;
  }
  return std::nullopt;
}

float f16_to_float(uint16_t h) noexcept {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: renormalize into a normal float.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace ringserve::model
