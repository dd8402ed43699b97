// Where a safetensors file's tensor bytes are, found without parsing its
// JSON header (model/safetensors.h parses it): the fast reader loads the
// data section in one pipelined read.
#pragma once

#include <cstdint>

#include "io/file_reader.h"
#include "ringserve/common/expected.h"

namespace ringserve::io {

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Headers larger than this are refused, as model/safetensors.h does.
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

// The data section: [8 + N, file size), N the little-endian u64 at offset 0.
// Errors: kCorruptData (shorter than 8 bytes, or N past the end of the
// file), kTooLarge (N above kMaxHeaderBytes), or the reader's error.
Expected<ByteRange> safetensors_data_range(FileReader& reader);

}  // namespace ringserve::io
