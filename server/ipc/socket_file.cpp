#include "ipc/socket_file.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace ringserve::ipc {
namespace {

Expected<sockaddr_un> make_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return make_error(Errc::kInvalidArgument, "socket path must be 1..{} bytes: '{}'",
                      sizeof(addr.sun_path) - 1, path);
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

Error os_error(std::string_view what, const std::string& path) {
  return make_error(Errc::kIoError, "{} {}: {}", what, path, std::strerror(errno));
}

// A leftover socket nobody listens on is removed; anything else at the path
// is left alone and reported.
Status clear_stale(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return ok();
    return os_error("stat", path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return make_error(Errc::kInvalidArgument, "{} exists and is not a socket; not touching it",
                      path);
  }
  if (socket_is_live(path)) {
    return make_error(Errc::kIoError, "a live server is already listening on {}", path);
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return os_error("removing stale socket", path);
  return ok();
}

Status ensure_parent(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return ok();
  std::error_code ec;
  if (std::filesystem::exists(parent, ec)) return ok();
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    return make_error(Errc::kIoError, "creating {}: {}", parent.string(), ec.message());
  }
  // Only the directory we created is narrowed: a private per-user dir.
  ::chmod(parent.c_str(), 0700);
  return ok();
}

}  // namespace

bool socket_is_live(const std::string& path) {
  auto addr = make_address(path);
  if (!addr) return false;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool live = ::connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) == 0 ||
              errno == EAGAIN;  // backlog full: someone is listening
  ::close(fd);
  return live;
}

Expected<SocketFile> SocketFile::create(const std::string& path, mode_t mode, int backlog) {
  RS_TRY_STATUS(make_address(path));
  RS_TRY_STATUS(ensure_parent(path));
  RS_TRY_STATUS(clear_stale(path));

  const std::string temp = fmt::format("{}.{}.tmp", path, ::getpid());
  auto temp_addr = RS_TRY(make_address(temp));
  ::unlink(temp.c_str());

  SocketFile file;
  file.path_ = path;
  file.fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (file.fd_ < 0) return os_error("socket for", path);
  if (::bind(file.fd_, reinterpret_cast<const sockaddr*>(&temp_addr), sizeof(temp_addr)) != 0) {
    return os_error("bind", temp);
  }
  struct Unlinker {
    const std::string& p;
    ~Unlinker() { ::unlink(p.c_str()); }
  } unlink_temp{temp};
  if (::chmod(temp.c_str(), mode) != 0) return os_error("chmod", temp);
  if (::listen(file.fd_, backlog) != 0) return os_error("listen", temp);
  if (::link(temp.c_str(), path.c_str()) != 0) {
    if (errno == EEXIST) {
      return make_error(Errc::kIoError, "another server claimed {} while we started", path);
    }
    return os_error("link", path);
  }
  file.linked_ = true;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    file.dev_ = st.st_dev;
    file.ino_ = st.st_ino;
  }
  return file;
}

SocketFile::SocketFile(SocketFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      dev_(other.dev_),
      ino_(other.ino_),
      linked_(std::exchange(other.linked_, false)) {}

SocketFile& SocketFile::operator=(SocketFile&& other) noexcept {
  if (this != &other) {
    remove();
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    dev_ = other.dev_;
    ino_ = other.ino_;
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

SocketFile::~SocketFile() {
  remove();
  if (fd_ >= 0) ::close(fd_);
}

int SocketFile::release_fd() {
  return std::exchange(fd_, -1);
}

void SocketFile::remove() {
  if (!linked_) return;
  linked_ = false;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
}

}  // namespace ringserve::ipc
