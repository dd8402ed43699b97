// Streaming safetensors writer. The header (which must come first) is built
// from the declared tensors, then tensor bytes are appended in declaration
// order in chunks of any size, so a 15 GB checkpoint never sits in memory.
//
//   auto w = RS_TRY(SafetensorsWriter::create(path, decls, {{"format", "pt"}}));
//   for (...) RS_TRY_STATUS(w.append(chunk));   // or w.write_tensor(name, bytes)
//   RS_TRY_STATUS(w.finish());
//
// The file is written as <path>.partial and renamed over <path> by finish(),
// so a crash never leaves a truncated file under the final name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "ringserve/common/expected.h"

namespace ringserve::model {

struct TensorDecl {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
};

class SafetensorsWriter {
 public:
  // Validates the declarations (non-empty unique names, non-negative dims,
  // no overflow) and writes the header. The header is padded with spaces to
  // a multiple of 8 bytes so the data section is 8-byte aligned.
  static Expected<SafetensorsWriter> create(const std::filesystem::path& path,
                                            std::vector<TensorDecl> tensors,
                                            const std::map<std::string, std::string>& metadata);

  SafetensorsWriter(SafetensorsWriter&& other) noexcept;
  SafetensorsWriter& operator=(SafetensorsWriter&& other) noexcept;
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;
  ~SafetensorsWriter();  // an unfinished file is removed

  // Appends bytes to the data section; they may span tensor boundaries.
  // kInvalidArgument when more bytes arrive than the declarations hold.
  Status append(std::span<const std::byte> bytes);

  // Appends one whole tensor; `name` must be the next declared tensor and
  // `bytes` its exact size (kInvalidArgument otherwise).
  Status write_tensor(std::string_view name, std::span<const std::byte> bytes);

  // The tensor the next appended byte belongs to ("" when all are complete).
  std::string_view next_tensor() const;

  // Checks every declared byte was written, flushes, renames into place.
  Status finish();

  uint64_t data_bytes() const { return data_size_; }

 private:
  SafetensorsWriter() = default;
  Status write_all(const void* data, size_t size);
  void abandon() noexcept;

  int fd_ = -1;
  std::filesystem::path path_;
  std::filesystem::path partial_path_;
  std::vector<TensorDecl> tensors_;
  std::vector<uint64_t> ends_;  // cumulative end offset of each tensor
  uint64_t data_size_ = 0;
  uint64_t written_ = 0;
};

// Writes model.safetensors.index.json: {"metadata": {"total_size": N},
// "weight_map": {tensor: shard file name}}.
Status write_safetensors_index(const std::filesystem::path& path,
                               const std::map<std::string, std::string>& weight_map,
                               uint64_t total_size);

}  // namespace ringserve::model
