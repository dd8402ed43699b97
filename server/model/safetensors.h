// The safetensors container: an 8-byte little-endian header length N, N bytes
// of JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {string: string}}), then the data section. Offsets are
// relative to the data section.
//
// The parser trusts nothing: every length, offset, shape and dtype is checked
// against the bytes actually present before any tensor is handed out, and
// every error names the file and, where there is one, the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.h"
#include "ringserve/common/expected.h"

namespace ringserve::model {

// Larger headers are refused before any allocation (kTooLarge). The 7B
// model's header is about 30 KB; 100 MB matches the reference implementation.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;
// The header JSON of a valid file is three levels deep; deeper is hostile.
inline constexpr int kMaxSafetensorsJsonDepth = 8;

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // empty for a scalar
  uint64_t begin = 0;          // byte offsets into the data section
  uint64_t end = 0;

  uint64_t numel() const;  // product of shape (1 for a scalar); fits: checked at parse
  uint64_t nbytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;              // in file order of data_offsets
  std::map<std::string, std::string> metadata;  // "__metadata__", may be empty
  uint64_t data_offset = 0;                     // 8 + N: where the data section starts
  uint64_t data_size = 0;                       // file size - data_offset
};

// Parses and validates the header of a safetensors file whose first bytes
// are `prefix` (at least 8 + N bytes, or the whole file when shorter) and
// whose total size is `file_size`. `source` names the file in errors.
// Errors: kCorruptData (truncated, non-JSON, bad types, offsets out of range,
// size != prod(shape) * dtype size, overlapping tensors, duplicate names),
// kTooLarge (header length above kMaxSafetensorsHeaderBytes), kUnsupported
// (a dtype this format version does not define).
Expected<SafetensorsHeader> parse_safetensors_header(std::span<const std::byte> prefix,
                                                     uint64_t file_size, std::string_view source);

// Renders a shape as "[a, b]" for error messages and logs.
std::string shape_string(std::span<const int64_t> shape);

}  // namespace ringserve::model
