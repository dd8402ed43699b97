// Wire messages <-> the scheduler's native types, at the transport edge.
// Text and chat prompts are tokenized here, so nothing below the transport
// sees a string prompt or a wire type.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "ringserve/protocol/messages.h"
#include "scheduler/request.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::ipc {

struct EdgeLimits {
  uint32_t max_prompt_tokens = 32768;
  uint32_t max_top_logprobs = 20;
  uint32_t max_stop_strings = 64;
};

// Everything about a GenerateRequest except its ids (the session assigns
// those). Errors: kUnsupported (text or chat prompt without a tokenizer),
// kTooLarge (prompt above the limit), kInvalidArgument (bad sampling values,
// unknown chat role, empty prompt).
Expected<serve::Request> to_request(const protocol::GenerateRequest& wire,
                                    const tokenizer::Tokenizer* tokenizer,
                                    const EdgeLimits& limits);

protocol::TokenEvent to_wire(const serve::TokenDelta& delta, uint64_t client_request_id);
protocol::Done to_wire(const serve::Completion& done, uint64_t client_request_id);
protocol::Stats to_wire(const serve::StatsSnapshot& stats, uint64_t nonce, uint32_t sessions,
                        std::chrono::microseconds uptime);

}  // namespace ringserve::ipc
