#include "ipc/edge_convert.h"

#include <climits>
#include <cmath>
#include <random>
#include <type_traits>

#include "tokenizer/chat_template.h"

namespace ringserve::ipc {
namespace {

Expected<std::vector<int32_t>> tokenize_prompt(const protocol::Prompt& prompt,
                                               const tokenizer::Tokenizer* tokenizer) {
  if (const auto* ids = std::get_if<protocol::PromptIds>(&prompt)) return ids->ids;
  if (!tokenizer) {
    return make_error(Errc::kUnsupported,
                      "this server has no tokenizer: send the prompt as token ids");
  }
  if (const auto* text = std::get_if<protocol::PromptText>(&prompt)) {
    // A raw completion prompt is the caller's whole context, special tokens
    // included (as with the model's own tooling).
    return tokenizer->encode(text->text, /*parse_special=*/true);
  }
  const auto& chat = std::get<protocol::PromptChat>(prompt);
  std::vector<tokenizer::ChatMessage> messages;
  messages.reserve(chat.messages.size());
  for (const auto& m : chat.messages) messages.push_back({m.role, m.content});
  auto rendered = RS_TRY(tokenizer::render_chat(messages, chat.add_generation_prompt));
  return tokenizer->encode(rendered, /*parse_special=*/true);
}

uint64_t draw_seed() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

}  // namespace

Expected<serve::Request> to_request(const protocol::GenerateRequest& wire,
                                    const tokenizer::Tokenizer* tokenizer,
                                    const EdgeLimits& limits) {
  const auto& s = wire.sampling;
  if (!std::isfinite(s.temperature) || s.temperature < 0.0f) {
    return make_error(Errc::kInvalidArgument, "temperature must be a finite value >= 0, got {}",
                      s.temperature);
  }
  if (!std::isfinite(s.top_p) || s.top_p <= 0.0f) {
    return make_error(Errc::kInvalidArgument, "top_p must be in (0, 1], got {}", s.top_p);
  }
  if (s.top_k > static_cast<uint32_t>(INT_MAX)) {
    return make_error(Errc::kInvalidArgument, "top_k {} is out of range", s.top_k);
  }
  if (s.max_new_tokens == 0 || s.max_new_tokens > static_cast<uint32_t>(INT_MAX)) {
    return make_error(Errc::kInvalidArgument, "max_new_tokens must be >= 1, got {}",
                      s.max_new_tokens);
  }
  if (wire.top_logprobs > limits.max_top_logprobs) {
    return make_error(Errc::kInvalidArgument, "top_logprobs {} is above the limit of {}",
                      wire.top_logprobs, limits.max_top_logprobs);
  }
  if (s.stop_strings.size() > limits.max_stop_strings) {
    return make_error(Errc::kInvalidArgument, "{} stop strings; at most {} are accepted",
                      s.stop_strings.size(), limits.max_stop_strings);
  }
  for (const auto& stop : s.stop_strings) {
    if (stop.empty()) return make_error(Errc::kInvalidArgument, "empty stop string");
  }

  serve::Request request;
  request.prompt = RS_TRY(tokenize_prompt(wire.prompt, tokenizer));
  if (request.prompt.empty()) return make_error(Errc::kInvalidArgument, "empty prompt");
  if (request.prompt.size() > limits.max_prompt_tokens) {
    return make_error(Errc::kTooLarge,
                      "prompt has {} tokens; the limit is {} (--max-prompt-tokens)",
                      request.prompt.size(), limits.max_prompt_tokens);
  }
  request.sampling.temperature = s.temperature;
  request.sampling.top_p = s.top_p;
  request.sampling.top_k = static_cast<int>(s.top_k);
  request.sampling.seed = s.seed ? *s.seed : draw_seed();
  request.sampling.top_logprobs = static_cast<int>(wire.top_logprobs);
  request.stop.max_new_tokens = static_cast<int>(s.max_new_tokens);
  request.stop.stop_strings = s.stop_strings;
  request.stop.stop_token_ids = s.stop_token_ids;
  request.stop.ignore_eos = s.ignore_eos;
  request.stream = wire.stream;
  request.arrival = serve::Clock::now();
  return request;
}

protocol::TokenEvent to_wire(const serve::TokenDelta& delta, uint64_t client_request_id) {
  protocol::TokenEvent event;
  event.request_id = client_request_id;
  event.token_ids = delta.tokens;
  event.text = delta.text;
  event.logprobs.reserve(delta.logprobs.size());
  for (const auto& lp : delta.logprobs) {
    protocol::TokenLogprobs out{lp.token, lp.logprob, {}};
    out.top.reserve(lp.top.size());
    for (const auto& alt : lp.top) out.top.push_back({alt.token, alt.logprob});
    event.logprobs.push_back(std::move(out));
  }
  return event;
}

protocol::Done to_wire(const serve::Completion& done, uint64_t client_request_id) {
  auto us = [](std::chrono::microseconds d) {
    return static_cast<uint64_t>(std::max<int64_t>(0, d.count()));
  };
  protocol::Done out;
  out.request_id = client_request_id;
  switch (done.reason) {
    case serve::FinishReason::kStop:
      out.reason = protocol::FinishReason::kStop;
      break;
    case serve::FinishReason::kLength:
      out.reason = protocol::FinishReason::kLength;
      break;
    case serve::FinishReason::kCancelled:
      out.reason = protocol::FinishReason::kCancelled;
      break;
    case serve::FinishReason::kError:
      out.reason = protocol::FinishReason::kError;
      break;
  }
  out.prompt_tokens = static_cast<uint32_t>(std::max(0, done.prompt_tokens));
  out.completion_tokens = static_cast<uint32_t>(std::max(0, done.completion_tokens));
  out.timings.queue_us = us(done.timings.queue);
  out.timings.prefill_us = us(done.timings.prefill);
  out.timings.first_token_us = us(done.timings.first_token);
  out.timings.total_us = us(done.timings.total);
  out.timings.mean_itl_us = us(done.timings.mean_itl);
  out.timings.max_itl_us = us(done.timings.max_itl);
  out.stop_string = done.stop_string;
  if (done.reason == serve::FinishReason::kError) out.error_message = done.error.to_string();
  return out;
}

protocol::Stats to_wire(const serve::StatsSnapshot& s, uint64_t nonce, uint32_t sessions,
                        std::chrono::microseconds uptime) {
  protocol::Stats out;
  out.nonce = nonce;
  out.requests_total = s.requests_total;
  out.requests_active = s.requests_active;
  out.queue_depth = s.queue_depth;
  out.prompt_tokens_total = s.prompt_tokens_total;
  out.completion_tokens_total = s.completion_tokens_total;
  out.batch_size_histogram = s.batch_size_histogram;
  out.kv_blocks_total = static_cast<uint32_t>(std::max<int64_t>(0, s.kv.blocks_total));
  out.kv_blocks_used = static_cast<uint32_t>(std::max<int64_t>(0, s.kv.blocks_used));
  out.sessions = sessions;
  out.uptime_us = static_cast<uint64_t>(uptime.count());
  out.engine = s.engine;
  out.steps_total = s.steps_total;
  out.mean_step_us = static_cast<uint64_t>(s.mean_step.count());
  out.ttft_p50_us = static_cast<uint64_t>(s.ttft_p50.count());
  out.ttft_p99_us = static_cast<uint64_t>(s.ttft_p99.count());
  out.itl_p50_us = static_cast<uint64_t>(s.itl_p50.count());
  out.itl_p99_us = static_cast<uint64_t>(s.itl_p99.count());
  return out;
}

}  // namespace ringserve::ipc
