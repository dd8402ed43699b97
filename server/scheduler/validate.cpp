#include "scheduler/validate.h"

#include <cmath>

namespace ringserve::serve {

Status validate_request(const Request& request, const engine::EngineInfo& info,
                        const SchedulerOptions& options) {
  if (request.prompt.empty()) return make_error(Errc::kInvalidArgument, "empty prompt");
  for (size_t i = 0; i < request.prompt.size(); ++i) {
    const int32_t id = request.prompt[i];
    if (id < 0 || id >= info.vocab_size) {
      return make_error(Errc::kInvalidArgument,
                        "prompt token {} at position {} is outside the vocabulary (size {})", id, i,
                        info.vocab_size);
    }
  }
  const StopCriteria& stop = request.stop;
  if (stop.max_new_tokens < 1) {
    return make_error(Errc::kInvalidArgument, "max_new_tokens must be at least 1 (got {})",
                      stop.max_new_tokens);
  }
  const int64_t needed =
      static_cast<int64_t>(request.prompt.size()) + static_cast<int64_t>(stop.max_new_tokens);
  if (info.max_context > 0 && needed > info.max_context) {
    return make_error(Errc::kTooLarge,
                      "prompt ({} tokens) + max_new_tokens ({}) exceeds the model's context of {} "
                      "tokens",
                      request.prompt.size(), stop.max_new_tokens, info.max_context);
  }
  if (stop.stop_strings.size() > options.max_stop_strings) {
    return make_error(Errc::kInvalidArgument, "{} stop strings; at most {} are allowed",
                      stop.stop_strings.size(), options.max_stop_strings);
  }
  for (const std::string& s : stop.stop_strings) {
    if (s.empty()) return make_error(Errc::kInvalidArgument, "empty stop string");
    if (s.size() > options.max_stop_string_bytes) {
      return make_error(Errc::kInvalidArgument, "stop string of {} bytes; at most {} are allowed",
                        s.size(), options.max_stop_string_bytes);
    }
  }
  for (int32_t id : stop.stop_token_ids) {
    if (id < 0 || id >= info.vocab_size) {
      return make_error(Errc::kInvalidArgument, "stop token {} is outside the vocabulary", id);
    }
  }
  const engine::SamplingParams& s = request.sampling;
  if (!std::isfinite(s.temperature) || !std::isfinite(s.top_p) || s.top_p <= 0.0f) {
    return make_error(Errc::kInvalidArgument, "temperature must be finite and top_p in (0, 1]");
  }
  if (s.top_k < 0) return make_error(Errc::kInvalidArgument, "top_k must not be negative");
  if (s.top_logprobs < 0 || s.top_logprobs > 20) {
    return make_error(Errc::kInvalidArgument, "top_logprobs must be in 0..20 (got {})",
                      s.top_logprobs);
  }
  return ok();
}

}  // namespace ringserve::serve
