// Builds OpenAI response bodies from scheduler events: one JSON document for
// a non-streaming call, or server-sent events in OpenAI's chunk format
// ("data: {...}\n\n", ending with "data: [DONE]\n\n") for a streaming one.
//
// Extensions, ignored by OpenAI clients: "token_ids" in each choice when the
// request set return_token_ids (as vLLM does), and the server's "timings"
// (queue, prefill, first token, total, in ms) in the non-streaming body and
// the final chunk of a stream (as llama.cpp does).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "http/openai_request.h"
#include "http/reasoning_stream.h"
#include "scheduler/request.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::http {

class ResponseBuilder {
 public:
  ResponseBuilder(const ApiCall& call, std::string model, uint64_t request_id, int64_t created,
                  const tokenizer::Tokenizer* tokenizer);

  // Streaming: SSE text to send (may be empty).
  std::string stream_start();  // chat: the role chunk
  std::string stream_delta(const serve::TokenDelta& delta);
  std::string stream_end(const serve::Completion& done);  // final chunk, usage, [DONE]
  std::string stream_error(const Error& error);           // an error event, then [DONE]

  // Non-streaming: collect deltas, then render the whole response.
  void collect(const serve::TokenDelta& delta);
  std::string body(const serve::Completion& done);

  const std::string& id() const { return id_; }

 private:
  nlohmann::json chunk_skeleton() const;
  nlohmann::json logprobs_json(const serve::TokenDelta& delta) const;
  void append_logprobs(nlohmann::json& acc, const serve::TokenDelta& delta) const;
  static std::string sse(const nlohmann::json& event);

  const ApiCall& call_;
  std::string model_;
  std::string id_;
  int64_t created_;
  const tokenizer::Tokenizer* tokenizer_;
  ReasoningStream reasoning_;
  std::string text_, reasoning_text_;
  std::vector<int32_t> token_ids_;
  nlohmann::json logprobs_acc_;
  size_t text_offset_ = 0;
};

}  // namespace ringserve::http
