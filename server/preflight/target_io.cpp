#include "preflight/target_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringserve::preflight {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Error os_error(const char* what, const std::filesystem::path& path, int err) {
  return make_error(err == EACCES || err == EPERM ? Errc::kPermissionDenied : Errc::kIoError,
                    "{} {}: {}", what, path.string(), std::strerror(err));
}

}  // namespace

Expected<std::string> FileTargetIo::read_text(const std::filesystem::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return os_error("open", path, errno);
  std::string text(4096, '\0');
  ssize_t n = ::read(fd.get(), text.data(), text.size());
  if (n < 0) return os_error("read", path, errno);
  text.resize(static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

Status FileTargetIo::write_text(const std::filesystem::path& path, std::string_view value) {
  // No O_CREAT: a missing attribute means the kernel does not offer it.
  Fd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (fd.get() < 0) return os_error("open", path, errno);
  std::string line(value);
  line += '\n';
  ssize_t n = ::write(fd.get(), line.data(), line.size());
  if (n < 0) return os_error("write", path, errno);
  if (static_cast<size_t>(n) != line.size()) {
    return make_error(Errc::kIoError, "write {}: short write", path.string());
  }
  return ok();
}

Expected<uint16_t> FileTargetIo::read_u16(const std::filesystem::path& config, size_t offset) {
  Fd fd(::open(config.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return os_error("open", config, errno);
  uint8_t b[2];
  ssize_t n = ::pread(fd.get(), b, 2, static_cast<off_t>(offset));
  if (n < 0) return os_error("read", config, errno);
  if (n != 2) {
    return make_error(Errc::kPermissionDenied, "read {}: offset 0x{:x} not readable",
                      config.string(), offset);
  }
  return static_cast<uint16_t>(b[0] | (b[1] << 8));
}

Status FileTargetIo::write_u16(const std::filesystem::path& config, size_t offset, uint16_t value) {
  Fd fd(::open(config.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd.get() < 0) return os_error("open", config, errno);
  const uint8_t b[2] = {static_cast<uint8_t>(value & 0xff), static_cast<uint8_t>(value >> 8)};
  ssize_t n = ::pwrite(fd.get(), b, 2, static_cast<off_t>(offset));
  if (n < 0) return os_error("write", config, errno);
  if (n != 2) return make_error(Errc::kIoError, "write {}: short write", config.string());
  return ok();
}

}  // namespace ringserve::preflight
