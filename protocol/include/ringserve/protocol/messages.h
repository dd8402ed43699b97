// Native mirrors of the wire messages (protocol/ringserve.fbs).
//
// Transports convert FlatBuffers to these at the edge (codec.h: encode() and
// to_message()), so neither the server core nor SDK users ever hold a
// pointer into a received buffer. Field meanings and defaults follow the
// schema; see the comments there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::protocol {

struct Hello {
  uint32_t protocol_version = 0;  // encode() fills kProtocolVersion when 0
  std::string client_name;
  bool want_shm = false;
  uint32_t request_ring_bytes = 0;
  uint32_t event_ring_bytes = 0;
  bool operator==(const Hello&) const = default;
};

struct HelloAck {
  uint32_t protocol_version = 0;  // encode() fills kProtocolVersion when 0
  std::string server_name;
  uint64_t session_id = 0;
  bool shm_granted = false;  // the frame carries the segment fds (shm_segment.h)
  uint64_t shm_bytes = 0;
  std::string model_name;
  uint32_t vocab_size = 0;
  uint32_t max_context = 0;
  uint32_t max_frame_bytes = 0;
  uint32_t max_inflight = 0;
  std::vector<int32_t> eos_token_ids;
  bool operator==(const HelloAck&) const = default;
};

struct ChatMessage {
  std::string role;
  std::string content;
  bool operator==(const ChatMessage&) const = default;
};

struct SamplingParams {
  uint32_t max_new_tokens = 256;
  float temperature = 0.0f;
  float top_p = 1.0f;
  uint32_t top_k = 0;
  std::optional<uint64_t> seed;  // wire: seed + has_seed
  std::vector<std::string> stop_strings;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool operator==(const SamplingParams&) const = default;
};

// Exactly one prompt form; to_message() rejects a request with none or several.
struct PromptText {
  std::string text;
  bool operator==(const PromptText&) const = default;
};
struct PromptIds {
  std::vector<int32_t> ids;
  bool operator==(const PromptIds&) const = default;
};
struct PromptChat {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = true;
  bool operator==(const PromptChat&) const = default;
};
using Prompt = std::variant<PromptText, PromptIds, PromptChat>;

struct GenerateRequest {
  uint64_t request_id = 0;
  Prompt prompt;
  SamplingParams sampling;
  bool stream = true;
  uint32_t top_logprobs = 0;
  bool operator==(const GenerateRequest&) const = default;
};

struct Cancel {
  uint64_t request_id = 0;
  bool operator==(const Cancel&) const = default;
};

struct TokenLogprob {
  int32_t token_id = 0;
  float logprob = 0.0f;
  bool operator==(const TokenLogprob&) const = default;
};

struct TokenLogprobs {
  int32_t token_id = 0;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;
  bool operator==(const TokenLogprobs&) const = default;
};

struct TokenEvent {
  uint64_t request_id = 0;
  std::vector<int32_t> token_ids;
  std::string text;
  std::vector<TokenLogprobs> logprobs;
  bool operator==(const TokenEvent&) const = default;
};

enum class FinishReason : uint8_t { kStop = 0, kLength = 1, kCancelled = 2, kError = 3 };

// "stop", "length", "cancelled", "error": the names clients print and
// OpenAI's finish_reason uses.
const char* finish_reason_name(FinishReason reason) noexcept;

struct Timings {
  uint64_t queue_us = 0;
  uint64_t prefill_us = 0;
  uint64_t first_token_us = 0;
  uint64_t total_us = 0;
  uint64_t mean_itl_us = 0;
  uint64_t max_itl_us = 0;
  bool operator==(const Timings&) const = default;
};

struct Done {
  uint64_t request_id = 0;
  FinishReason reason = FinishReason::kStop;
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  Timings timings;
  std::string stop_string;
  std::string error_message;
  bool operator==(const Done&) const = default;
};

// Wire name "Error"; ErrorMessage here so it does not shadow ringserve::Error.
struct ErrorMessage {
  uint64_t request_id = 0;      // 0: a session-level error
  Errc code = Errc::kInternal;  // mapped to wire::ErrorCode by error_codes.h
  std::string message;
  bool operator==(const ErrorMessage&) const = default;
};

struct StatsRequest {
  uint64_t nonce = 0;
  bool operator==(const StatsRequest&) const = default;
};

struct Stats {
  uint64_t nonce = 0;
  uint64_t requests_total = 0;
  uint32_t requests_active = 0;
  uint32_t queue_depth = 0;
  uint64_t prompt_tokens_total = 0;
  uint64_t completion_tokens_total = 0;
  std::vector<uint64_t> batch_size_histogram;
  uint32_t kv_blocks_total = 0;
  uint32_t kv_blocks_used = 0;
  uint32_t sessions = 0;
  uint64_t uptime_us = 0;
  std::string engine;
  uint64_t steps_total = 0;
  uint64_t mean_step_us = 0;
  uint64_t ttft_p50_us = 0;
  uint64_t ttft_p99_us = 0;
  uint64_t itl_p50_us = 0;
  uint64_t itl_p99_us = 0;
  bool operator==(const Stats&) const = default;
};

struct Ping {
  uint64_t nonce = 0;
  uint64_t client_time_ns = 0;
  bool operator==(const Ping&) const = default;
};

struct Pong {
  uint64_t nonce = 0;
  uint64_t client_time_ns = 0;
  bool operator==(const Pong&) const = default;
};

// One alternative per wire union member, in schema order.
using Message = std::variant<Hello, HelloAck, GenerateRequest, Cancel, TokenEvent, Done,
                             ErrorMessage, StatsRequest, Stats, Ping, Pong>;

// "GenerateRequest", "Ping", ...: for log lines.
const char* message_name(const Message& message) noexcept;

}  // namespace ringserve::protocol
