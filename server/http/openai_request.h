// OpenAI request bodies (POST /v1/chat/completions, /v1/completions) parsed
// into the scheduler's native Request. All JSON stays in the HTTP layer.
//
// Accepted fields: model, messages | prompt (text, a token-id array, or a
// one-element array of text), max_tokens / max_completion_tokens,
// temperature, top_p, top_k, seed, stop (string or list), stream,
// stream_options.include_usage, logprobs, top_logprobs, n (1 only),
// ignore_eos, return_token_ids (vLLM's extension: each choice also carries
// the generated "token_ids"). Unknown fields are ignored, as OpenAI's own
// server does; a known field with the wrong type is a 400.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "ringserve/common/expected.h"
#include "scheduler/request.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::http {

enum class Endpoint { kChat, kCompletions };

struct ApiCall {
  Endpoint endpoint = Endpoint::kChat;
  serve::Request request;  // prompt tokenized; ids are set by the session
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;  // report logprobs of the chosen tokens
  int top_logprobs = 0;
  bool split_reasoning = false;  // chat: <think>…</think> -> reasoning_content
  bool return_token_ids = false;
};

struct ParseContext {
  const tokenizer::Tokenizer* tokenizer = nullptr;  // null: token-id prompts only
  const engine::EngineInfo* info = nullptr;
  uint32_t default_max_tokens = 4096;
  uint32_t max_prompt_tokens = 32768;  // the server's --max-prompt-tokens
};

// Errors: kInvalidArgument (malformed JSON, wrong types, bad values; the
// message names the field), kUnsupported (n > 1, text without a tokenizer),
// kTooLarge (prompt + max_tokens beyond the engine's context).
Expected<ApiCall> parse_api_call(Endpoint endpoint, std::string_view body,
                                 const ParseContext& context);

}  // namespace ringserve::http
