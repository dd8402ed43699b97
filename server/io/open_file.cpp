#include "io/open_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "io/method.h"

namespace ringserve::io {
namespace {

Error open_error(const std::filesystem::path& path, int err) {
  const Errc code = err == ENOENT || err == ENOTDIR ? Errc::kNotFound
                    : err == EACCES || err == EPERM ? Errc::kPermissionDenied
                                                    : Errc::kIoError;
  return make_error(code, "{}: cannot open: {}", path.string(), std::strerror(err));
}

int open_retry(const char* path, int flags) {
  int fd;
  do fd = ::open(path, flags);
  while (fd < 0 && errno == EINTR);
  return fd;
}

// Empty when direct I/O at kDirectAlignment works for this file as far as
// the kernel tells (statx, Linux 6.1+); otherwise the reason it does not.
std::string direct_io_refusal(int fd) {
#ifdef STATX_DIOALIGN
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
      (stx.stx_mask & STATX_DIOALIGN)) {
    if (stx.stx_dio_offset_align == 0) return "the filesystem does not support direct I/O";
    if (stx.stx_dio_offset_align > kDirectAlignment || stx.stx_dio_mem_align > kDirectAlignment)
      return fmt::format("direct I/O needs {}-byte offsets and {}-byte buffers",
                         stx.stx_dio_offset_align, stx.stx_dio_mem_align);
  }
#else
  (void)fd;
#endif
  return {};
}

}  // namespace

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<OpenedFile> open_for_read(const std::filesystem::path& path, bool want_direct) {
  OpenedFile out;
  int fd = -1;
  if (want_direct) {
    fd = open_retry(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0 && errno != EINVAL) return open_error(path, errno);
    if (fd < 0) out.direct_refused = "open with O_DIRECT failed: EINVAL";
  }
  if (fd < 0) fd = open_retry(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return open_error(path, errno);
  out.fd = Fd(fd);

  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return make_error(Errc::kIoError, "{}: fstat: {}", path.string(), std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return make_error(Errc::kInvalidArgument, "{}: is a directory, not a file", path.string());
  if (!S_ISREG(st.st_mode))
    return make_error(Errc::kInvalidArgument, "{}: not a regular file", path.string());
  out.size = static_cast<uint64_t>(st.st_size);
  out.direct = want_direct && out.direct_refused.empty();

  if (out.direct) {
    std::string why = direct_io_refusal(fd);
    if (!why.empty()) {
      out.direct_refused = std::move(why);
      out.direct = false;
      const int buffered = open_retry(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (buffered < 0) return open_error(path, errno);
      out.fd = Fd(buffered);
    }
  }
  return out;
}

double page_cache_fraction(int fd, uint64_t size) {
  if (size == 0) return 1.0;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return -1.0;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t pages = (size + page - 1) / page;
  constexpr uint64_t kWindows = 512, kWindowPages = 64;
  const bool sample = size > (uint64_t{256} << 20) && pages > kWindows * kWindowPages;
  const uint64_t windows = sample ? kWindows : 1;
  const uint64_t window_pages = sample ? kWindowPages : pages;
  std::vector<unsigned char> resident(window_pages);
  size_t cached = 0, asked = 0;
  for (uint64_t w = 0; w < windows; ++w) {
    // Window w starts at page floor(w * (pages - window) / (windows - 1)):
    // the first at the start of the file, the last at its end.
    const uint64_t first = windows == 1 ? 0 : w * (pages - window_pages) / (windows - 1);
    const uint64_t n = std::min(window_pages, pages - first);
    const uint64_t bytes = std::min<uint64_t>(n * page, size - first * page);
    if (::mincore(static_cast<char*>(map) + first * page, bytes, resident.data()) != 0) {
      ::munmap(map, size);
      return -1.0;
    }
    for (uint64_t i = 0; i < n; ++i) cached += resident[i] & 1u;
    asked += n;
  }
  ::munmap(map, size);
  return static_cast<double>(cached) / static_cast<double>(asked);
}

Expected<Fd> reopen_buffered(const std::filesystem::path& path) {
  const int fd = open_retry(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return open_error(path, errno);
  return Fd(fd);
}

}  // namespace ringserve::io
