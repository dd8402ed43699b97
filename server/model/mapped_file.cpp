#include "model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ringserve::model {
namespace {

Error errno_error(const std::filesystem::path& path, const char* what) {
  int e = errno;
  Errc code = e == ENOENT                   ? Errc::kNotFound
              : (e == EACCES || e == EPERM) ? Errc::kPermissionDenied
                                            : Errc::kIoError;
  return make_error(code, "{}: {}: {}", path.string(), what, std::strerror(e));
}

}  // namespace

Expected<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(path, "open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Error e = errno_error(path, "stat");
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(Errc::kInvalidArgument, "{}: not a regular file", path.string());
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      Error e = errno_error(path, "mmap");
      ::close(fd);
      return e;
    }
    file.data_ = p;
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  reset();
}

void MappedFile::reset() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::advise_sequential() const {
  if (data_ != nullptr) {
    ::madvise(data_, size_, MADV_SEQUENTIAL);
    ::madvise(data_, size_, MADV_WILLNEED);
  }
}

}  // namespace ringserve::model
