// Page-aligned host memory for O_DIRECT reads when the caller has no pinned
// buffer of its own (tests, CPU-side loading, read_into's staging).
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "ringserve/common/expected.h"

namespace ringserve::io {

class AlignedBuffer {
 public:
  // Errors: kInvalidArgument (alignment not a power of two, or zero bytes),
  // kResourceExhausted (allocation failed).
  static Expected<AlignedBuffer> allocate(size_t bytes, size_t alignment = 4096);

  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& o) noexcept { swap(o); }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::span<std::byte> span() const { return {data_, size_}; }
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void swap(AlignedBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ringserve::io
