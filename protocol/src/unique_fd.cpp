#include "ringserve/protocol/unique_fd.h"

#include <unistd.h>

namespace ringserve::protocol {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) ::close(fd_);
  fd_ = fd;
}

}  // namespace ringserve::protocol
