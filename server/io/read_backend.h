// The engines that move file bytes into memory (internal to rs_io): the
// reader hands each a stream of chunk reads and collects completions in any
// order. Short reads are completed inside the backend, so a completion with
// fewer bytes than asked means end of file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ringserve/common/expected.h"

namespace ringserve::io {

struct ReadRequest {
  uint64_t tag = 0;  // the reader's chunk number
  int fd = -1;
  uint64_t offset = 0;
  size_t length = 0;
  std::byte* dest = nullptr;
};

struct ReadCompletion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes read (< length only at end of file), or -errno
};

class ReadBackend {
 public:
  virtual ~ReadBackend() = default;
  // Most requests this backend keeps in flight.
  virtual size_t max_in_flight() const = 0;
  // Queues a read; at most max_in_flight() may be outstanding.
  virtual Status submit(const ReadRequest& request) = 0;
  // Blocks until one queued read completes.
  virtual Expected<ReadCompletion> wait() = 0;
};

// pread on `threads` worker threads (1..16).
std::unique_ptr<ReadBackend> make_pread_backend(int threads);

// io_uring with `depth` entries. Errors: kUnsupported when the kernel or
// the build has no io_uring (ENOSYS, EPERM from kernel.io_uring_disabled,
// ...), with the reason.
Expected<std::unique_ptr<ReadBackend>> make_uring_backend(unsigned depth);

}  // namespace ringserve::io
