// A read-only view of a whole file. This is the one place the loader touches
// the OS for file bytes, so a faster reader (O_DIRECT + io_uring into pinned
// buffers, issue 7) can replace mmap without changing the parsers above it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "ringserve/common/expected.h"

namespace ringserve::model {

class MappedFile {
 public:
  // Maps `path` read-only (MAP_PRIVATE). An empty file maps to an empty span.
  // Errors: kNotFound, kIoError (with errno text), kPermissionDenied.
  static Expected<MappedFile> open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

  // Asks the kernel to read ahead the whole mapping (sequential access hint).
  void advise_sequential() const;

 private:
  void reset() noexcept;

  void* data_ = nullptr;
  size_t size_ = 0;
  std::filesystem::path path_;
};

}  // namespace ringserve::model
