#include "io/aligned_buffer.h"

#include <cstdlib>

namespace ringserve::io {

Expected<AlignedBuffer> AlignedBuffer::allocate(size_t bytes, size_t alignment) {
  if (bytes == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0 ||
      alignment < sizeof(void*))
    return make_error(Errc::kInvalidArgument, "aligned buffer: {} bytes at alignment {}", bytes,
                      alignment);
  const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = nullptr;
  if (posix_memalign(&p, alignment, rounded) != 0)
    return make_error(Errc::kResourceExhausted, "aligned buffer: cannot allocate {} bytes", bytes);
  AlignedBuffer b;
  b.data_ = static_cast<std::byte*>(p);
  b.size_ = bytes;
  return b;
}

AlignedBuffer::~AlignedBuffer() {
  std::free(data_);
}

}  // namespace ringserve::io
