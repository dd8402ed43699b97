// The listening socket's file on disk: refusing a path a live server owns,
// clearing a stale one, creating it with its permissions already set, and
// removing it only while it is still ours.
#pragma once

#include <sys/types.h>

#include <string>

#include "ringserve/common/expected.h"

namespace ringserve::ipc {

class SocketFile {
 public:
  // Binds and listens at `path` with permission `mode`. The socket is bound
  // under a temporary name, chmod-ed, then hard-linked to `path`, so no
  // client ever sees it with the umask's permissions and two servers racing
  // for one path cannot both win. Creates a missing parent directory with
  // mode 0700.
  // Errors: kIoError when a live server already listens at `path` or the OS
  // refuses; kInvalidArgument when `path` is too long or names something
  // other than a socket (we never delete a user's regular file).
  static Expected<SocketFile> create(const std::string& path, mode_t mode, int backlog);

  SocketFile(SocketFile&& other) noexcept;
  SocketFile& operator=(SocketFile&& other) noexcept;
  SocketFile(const SocketFile&) = delete;
  SocketFile& operator=(const SocketFile&) = delete;
  ~SocketFile();

  // The listening fd; ownership passes to the caller.
  int release_fd();
  const std::string& path() const { return path_; }

  // Unlinks the path if it still names the socket we created (a later server
  // may have replaced it). Idempotent.
  void remove();

 private:
  SocketFile() = default;
  std::string path_;
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool linked_ = false;
};

// Whether something accepts connections at `path` right now.
bool socket_is_live(const std::string& path);

}  // namespace ringserve::ipc
