// Named tensors of a checkpoint, as raw byte views into mapped files: one
// model.safetensors or the shards listed by model.safetensors.index.json.
// The CPU loader quantizes from these views on the host; the CUDA engine can
// upload the same bf16 spans and quantize on the GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.h"
#include "model/mapped_file.h"
#include "model/safetensors.h"
#include "ringserve/common/expected.h"

namespace ringserve::model {

struct TensorView {
  std::string_view name;
  DType dtype = DType::kF32;
  std::span<const int64_t> shape;
  std::span<const std::byte> bytes;  // exactly numel * dtype_size bytes, validated
  std::string_view file;             // file name (no directory), for error messages
  size_t shard = 0;                  // index of its file (TensorSource::shard_path)
  uint64_t file_offset = 0;          // where bytes[0] is in that file (direct readers)

  uint64_t numel() const;
  // "model.safetensors: tensor lm_head.weight" -- the prefix of every error
  // about this tensor.
  std::string where() const;
};

class TensorSource {
 public:
  // Opens DIR/model.safetensors, or DIR/model.safetensors.index.json and the
  // shards its weight_map names (plain file names inside DIR only). Every
  // header is parsed and validated before this returns; a tensor the index
  // maps to a shard that does not hold it is an error.
  static Expected<TensorSource> open_dir(const std::filesystem::path& dir);

  // Opens one safetensors file.
  static Expected<TensorSource> open_file(const std::filesystem::path& path);

  TensorSource();
  TensorSource(TensorSource&&) noexcept;
  TensorSource& operator=(TensorSource&&) noexcept;
  ~TensorSource();

  // All tensors, sorted by name.
  const std::vector<TensorView>& tensors() const { return views_; }

  // nullptr when absent.
  const TensorView* find(std::string_view name) const;

  // kNotFound naming the tensor and the file(s) searched.
  Expected<TensorView> get(std::string_view name) const;

  // "__metadata__" of the first file (shards of one checkpoint share it).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // "model.safetensors" or "model.safetensors.index.json (3 shards)".
  const std::string& description() const { return description_; }

  // Sum of all tensors' bytes.
  uint64_t total_bytes() const;

  size_t shard_count() const { return shards_.size(); }
  const std::filesystem::path& shard_path(size_t shard) const;

  // Hints the kernel to read all files ahead (sequential access).
  void advise_sequential() const;

 private:
  struct Shard {
    MappedFile file;
    std::string name;
    SafetensorsHeader header;
  };
  Status add_shard(const std::filesystem::path& path,
                   const std::map<std::string, std::string>* only);
  void build_views();

  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<TensorView> views_;
  std::map<std::string, std::string> metadata_;
  std::string description_;
};

}  // namespace ringserve::model
