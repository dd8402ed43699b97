#include "io/method.h"

namespace ringserve::io {

const char* method_name(Method m) {
  switch (m) {
    case Method::kIoUringDirect:
      return "io_uring+O_DIRECT";
    case Method::kIoUringBuffered:
      return "io_uring (page cache)";
    case Method::kPreadDirect:
      return "pread+O_DIRECT";
    case Method::kPreadBuffered:
      return "pread (page cache)";
  }
  return "?";
}

bool uses_io_uring(Method m) {
  return m == Method::kIoUringDirect || m == Method::kIoUringBuffered;
}
bool uses_direct_io(Method m) {
  return m == Method::kIoUringDirect || m == Method::kPreadDirect;
}

Method make_method(bool io_uring, bool direct) {
  if (io_uring) return direct ? Method::kIoUringDirect : Method::kIoUringBuffered;
  return direct ? Method::kPreadDirect : Method::kPreadBuffered;
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kAuto:
      return "auto";
    case Backend::kIoUring:
      return "io_uring";
    case Backend::kPread:
      return "pread";
  }
  return "?";
}

const char* direct_io_name(DirectIo d) {
  switch (d) {
    case DirectIo::kAuto:
      return "auto";
    case DirectIo::kOn:
      return "on";
    case DirectIo::kOff:
      return "off";
  }
  return "?";
}

}  // namespace ringserve::io
