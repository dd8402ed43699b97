// Built when liburing was not found: io_uring is reported unavailable and
// the reader uses pread.
#include "io/read_backend.h"

namespace ringserve::io {

Expected<std::unique_ptr<ReadBackend>> make_uring_backend(unsigned) {
  return make_error(Errc::kUnsupported, "this build has no io_uring (liburing not found)");
}

}  // namespace ringserve::io
