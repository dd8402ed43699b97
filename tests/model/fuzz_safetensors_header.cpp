// libFuzzer target: the safetensors header parser on arbitrary bytes. Every
// input must yield a header or an error; when it yields a header, every
// tensor's bytes must lie inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
  auto header = ringserve::model::parse_safetensors_header(bytes, size, "fuzz.safetensors");
  if (header) {
    for (const auto& t : header->tensors) {
      if (header->data_offset + t.end > size || t.end < t.begin) std::abort();
      if (t.numel() * ringserve::model::dtype_size(t.dtype) != t.nbytes()) std::abort();
    }
  }
  return 0;
}
