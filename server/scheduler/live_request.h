// One admitted-or-waiting request on the engine thread: turns the engine's
// sampled tokens into the client's events (streamed text, stop conditions,
// logprobs, timings) and delivers them to its sink.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "scheduler/request.h"
#include "scheduler/stop_matcher.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::serve {

class LiveRequest {
 public:
  // Without a tokenizer the events carry token ids only (empty text) and
  // stop strings cannot match.
  LiveRequest(Request request, std::shared_ptr<RequestSink> sink,
              std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
              std::span<const int32_t> eos_token_ids);

  uint64_t id() const { return request_.id; }
  const Request& request() const { return request_; }
  const std::string& log_id() const { return request_.log_id; }
  bool admitted() const { return admitted_at_.has_value(); }
  int generated() const { return generated_; }

  void mark_admitted(Clock::time_point now) { admitted_at_ = now; }

  struct TokenOutcome {
    std::optional<FinishReason> finish;
    std::optional<std::chrono::microseconds> ttft;  // set on the first token
    std::optional<std::chrono::microseconds> itl;   // set on every later token
  };
  // Records one token from a step that ran [step_start, step_end).
  TokenOutcome on_token(const engine::SampledToken& token, Clock::time_point step_start,
                        Clock::time_point step_end);

  // Streaming: sends this step's tokens as one TokenDelta (if any).
  void deliver_step();

  // Sends whatever output remains, then the Completion (exactly once).
  // Returns a copy of what was sent, for the statistics.
  Completion finish(FinishReason reason, Clock::time_point now, Error error = {});

 private:
  void append_text(const std::string& piece);

  Request request_;
  std::shared_ptr<RequestSink> sink_;
  std::optional<tokenizer::StreamDecoder> decoder_;
  StopMatcher stop_;
  std::vector<int32_t> eos_;
  TokenDelta pending_;
  std::optional<size_t> matched_stop_;
  int generated_ = 0;
  bool done_ = false;

  std::optional<Clock::time_point> admitted_at_;
  std::optional<Clock::time_point> first_token_at_;
  Clock::time_point last_token_at_{};
  std::chrono::microseconds prefill_{0};
  std::chrono::microseconds itl_sum_{0};
  std::chrono::microseconds itl_max_{0};
  int itl_count_ = 0;
};

}  // namespace ringserve::serve
