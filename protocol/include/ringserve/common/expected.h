// Errors as values. Every fallible function inside ringserve returns
// Expected<T>; exceptions are only caught at process edges (main, tests).
// One error type for the whole project keeps the mapping to wire error codes
// in one place (protocol/src/error_codes.cpp).
#pragma once

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace ringserve {

enum class Errc : int {
  kOk = 0,
  kInvalidArgument,    // the caller asked for something malformed
  kNotFound,           // a file, tensor, request or device that is not there
  kIoError,            // the OS said no (errno in the message)
  kCorruptData,        // bytes that fail validation: a file, a frame, a ring record
  kUnsupported,        // well-formed, but not something we implement
  kResourceExhausted,  // a limit was hit: memory, KV cache, sessions, queue
  kProtocolError,      // a peer broke the wire or ring protocol
  kVersionMismatch,    // protocol or file format version we cannot speak
  kTooLarge,           // a frame, prompt or file above its configured maximum
  kCancelled,
  kTimeout,
  kUnavailable,  // no server, server gone, engine not ready
  kPermissionDenied,
  kInternal,  // a bug: an invariant did not hold
};

const char* errc_name(Errc code) noexcept;

struct Error {
  Errc code = Errc::kInternal;
  std::string message;

  // "corrupt_data: model.safetensors: tensor x: offsets out of range"
  std::string to_string() const;
};

template <class... Args>
Error make_error(Errc code, fmt::format_string<Args...> format, Args&&... args) {
  return Error{code, fmt::format(format, std::forward<Args>(args)...)};
}

// Prefix an error's message with context as it travels up ("loading x: ...").
inline Error with_context(Error e, std::string_view context) {
  e.message = fmt::format("{}: {}", context, e.message);
  return e;
}

template <class T>
class [[nodiscard]] Expected {
 public:
  using value_type = T;

  Expected(const T& value) : v_(value) {}          // NOLINT: implicit by design
  Expected(T&& value) : v_(std::move(value)) {}    // NOLINT
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT
  template <class U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, T> &&
           !std::is_same_v<std::decay_t<U>, Error> && !std::is_same_v<std::decay_t<U>, Expected>)
      Expected(U&& value)
      : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& {
    assert(!has_value());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!has_value());
    return std::get<1>(std::move(v_));
  }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Expected<void> {
 public:
  using value_type = void;

  Expected() = default;
  Expected(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  void value() const { assert(ok_); }
  const Error& error() const& {
    assert(!ok_);
    return error_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(error_);
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Expected<void>;

inline Status ok() {
  return {};
}

}  // namespace ringserve

// Propagate an error from an Expected-returning expression; yields its value.
// Statement-expression form is a GNU extension that g++, clang and nvcc accept.
#define RS_TRY(expr)                                               \
  ({                                                               \
    auto&& rs_try_result_ = (expr);                                \
    if (!rs_try_result_) return std::move(rs_try_result_).error(); \
    std::move(rs_try_result_).value();                             \
  })

#define RS_TRY_STATUS(expr)                                        \
  do {                                                             \
    auto&& rs_try_status_ = (expr);                                \
    if (!rs_try_status_) return std::move(rs_try_status_).error(); \
  } while (0)
