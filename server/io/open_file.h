// Opening a file for reading, with or without O_DIRECT (internal to rs_io).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "ringserve/common/expected.h"

namespace ringserve::io {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct OpenedFile {
  Fd fd;
  uint64_t size = 0;
  bool direct = false;
  std::string direct_refused;  // why O_DIRECT was not used, when it was asked for
};

// Opens a regular file read-only. With want_direct, tries O_DIRECT and, if
// the filesystem refuses it (EINVAL on open, or statx reporting no direct
// I/O or an alignment above kDirectAlignment), opens it buffered and says
// why in direct_refused. Errors: kNotFound, kPermissionDenied,
// kInvalidArgument (a directory or not a regular file), kIoError.
Expected<OpenedFile> open_for_read(const std::filesystem::path& path, bool want_direct);

// Fraction of the file's pages in the page cache (mmap + mincore, which
// reads nothing), or a negative value when the kernel will not say. Files
// over 256 MiB are sampled (512 evenly spaced windows of 64 pages): asking
// about every page of a 15 GB checkpoint took 0.12 s, a fifth of loading it.
double page_cache_fraction(int fd, uint64_t size);

// The same file opened again without O_DIRECT (the fallback after a read
// that the filesystem refused with EINVAL).
Expected<Fd> reopen_buffered(const std::filesystem::path& path);

}  // namespace ringserve::io
