#include "http/openai_error.h"

#include <nlohmann/json.hpp>

namespace ringserve::http {

ApiError invalid_request(std::string message, std::string param) {
  return ApiError{400, "invalid_request_error", "invalid_request", std::move(message),
                  std::move(param)};
}

ApiError to_api_error(const Error& error) {
  switch (error.code) {
    case Errc::kInvalidArgument:
    case Errc::kUnsupported:
    case Errc::kProtocolError:
    case Errc::kCorruptData:
      return invalid_request(error.message);
    case Errc::kTooLarge:
      return ApiError{400, "invalid_request_error", "context_length_exceeded", error.message, {}};
    case Errc::kResourceExhausted:
      return ApiError{429, "rate_limit_error", "rate_limit_exceeded", error.message, {}};
    case Errc::kUnavailable:
      return ApiError{503, "server_error", "unavailable", error.message, {}};
    case Errc::kCancelled:
      return ApiError{499, "server_error", "cancelled", error.message, {}};
    default:
      return ApiError{500, "server_error", errc_name(error.code), error.message, {}};
  }
}

std::string to_json(const ApiError& error) {
  nlohmann::json j;
  j["error"] = {
      {"message", error.message},
      {"type", error.type},
      {"param", error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param)},
      {"code", error.code}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ringserve::http
