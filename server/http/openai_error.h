// OpenAI's error JSON and the one mapping from ringserve errors to HTTP
// status codes: {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>

#include "ringserve/common/expected.h"

namespace ringserve::http {

struct ApiError {
  int status = 500;
  std::string type;  // "invalid_request_error", "server_error", ...
  std::string code;  // "context_length_exceeded", "rate_limit_exceeded", ...
  std::string message;
  std::string param;  // the offending field, when there is one
};

ApiError invalid_request(std::string message, std::string param = {});

// kInvalidArgument/kUnsupported -> 400, kTooLarge -> 400 context_length_exceeded,
// kResourceExhausted -> 429, kUnavailable -> 503, anything else -> 500.
ApiError to_api_error(const Error& error);

std::string to_json(const ApiError& error);

}  // namespace ringserve::http
