#include "ringserve/common/expected.h"

namespace ringserve {

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::kOk:
      return "ok";
    case Errc::kInvalidArgument:
      return "invalid_argument";
    case Errc::kNotFound:
      return "not_found";
    case Errc::kIoError:
      return "io_error";
    case Errc::kCorruptData:
      return "corrupt_data";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kResourceExhausted:
      return "resource_exhausted";
    case Errc::kProtocolError:
      return "protocol_error";
    case Errc::kVersionMismatch:
      return "version_mismatch";
    case Errc::kTooLarge:
      return "too_large";
    case Errc::kCancelled:
      return "cancelled";
    case Errc::kTimeout:
      return "timeout";
    case Errc::kUnavailable:
      return "unavailable";
    case Errc::kPermissionDenied:
      return "permission_denied";
    case Errc::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Error::to_string() const {
  return fmt::format("{}: {}", errc_name(code), message);
}

}  // namespace ringserve
