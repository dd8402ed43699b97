#include "ringserve/protocol/error_codes.h"

namespace ringserve::protocol {

using wire::ErrorCode;

ErrorCode to_wire(Errc code) noexcept {
  switch (code) {
    case Errc::kOk:
      return ErrorCode::Internal;
    case Errc::kInvalidArgument:
      return ErrorCode::InvalidArgument;
    case Errc::kNotFound:
      return ErrorCode::NotFound;
    case Errc::kIoError:
      return ErrorCode::Io;
    case Errc::kCorruptData:
      return ErrorCode::Corrupt;
    case Errc::kUnsupported:
      return ErrorCode::Unsupported;
    case Errc::kResourceExhausted:
      return ErrorCode::ResourceExhausted;
    case Errc::kProtocolError:
      return ErrorCode::ProtocolError;
    case Errc::kVersionMismatch:
      return ErrorCode::VersionMismatch;
    case Errc::kTooLarge:
      return ErrorCode::TooLarge;
    case Errc::kCancelled:
      return ErrorCode::Cancelled;
    case Errc::kTimeout:
      return ErrorCode::Timeout;
    case Errc::kUnavailable:
      return ErrorCode::Unavailable;
    case Errc::kPermissionDenied:
      return ErrorCode::PermissionDenied;
    case Errc::kInternal:
      return ErrorCode::Internal;
  }
  return ErrorCode::Unknown;
}

Errc from_wire(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::Unknown:
      return Errc::kInternal;
    case ErrorCode::InvalidArgument:
      return Errc::kInvalidArgument;
    case ErrorCode::NotFound:
      return Errc::kNotFound;
    case ErrorCode::Io:
      return Errc::kIoError;
    case ErrorCode::Corrupt:
      return Errc::kCorruptData;
    case ErrorCode::Unsupported:
      return Errc::kUnsupported;
    case ErrorCode::ResourceExhausted:
      return Errc::kResourceExhausted;
    case ErrorCode::ProtocolError:
      return Errc::kProtocolError;
    case ErrorCode::VersionMismatch:
      return Errc::kVersionMismatch;
    case ErrorCode::TooLarge:
      return Errc::kTooLarge;
    case ErrorCode::Cancelled:
      return Errc::kCancelled;
    case ErrorCode::Timeout:
      return Errc::kTimeout;
    case ErrorCode::Unavailable:
      return Errc::kUnavailable;
    case ErrorCode::PermissionDenied:
      return Errc::kPermissionDenied;
    case ErrorCode::Internal:
      return Errc::kInternal;
  }
  return Errc::kInternal;
}

}  // namespace ringserve::protocol
