#include "scheduler/live_request.h"

#include <algorithm>

namespace ringserve::serve {
namespace {

std::chrono::microseconds since(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::microseconds>(to - from);
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

LiveRequest::LiveRequest(Request request, std::shared_ptr<RequestSink> sink,
                         std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                         std::span<const int32_t> eos_token_ids)
    : request_(std::move(request)),
      sink_(std::move(sink)),
      stop_(request_.stop.stop_strings),
      eos_(eos_token_ids.begin(), eos_token_ids.end()) {
  if (tokenizer) decoder_.emplace(std::move(tokenizer));
  pending_.id = request_.id;
}

LiveRequest::TokenOutcome LiveRequest::on_token(const engine::SampledToken& token,
                                                Clock::time_point step_start,
                                                Clock::time_point step_end) {
  TokenOutcome outcome;
  if (done_ || matched_stop_) return outcome;
  if (!first_token_at_) {
    first_token_at_ = step_end;
    prefill_ = since(step_start, step_end);
    outcome.ttft = since(request_.arrival, step_end);
  } else {
    const auto itl = since(last_token_at_, step_end);
    itl_sum_ += itl;
    itl_max_ = std::max(itl_max_, itl);
    ++itl_count_;
    outcome.itl = itl;
  }
  last_token_at_ = step_end;

  // A stop token (eos, or one the request names) ends generation without
  // being part of the output, as in `ringserve generate`: neither its id nor
  // its text ("<｜end▁of▁sentence｜>") goes out, nor is it counted.
  const bool stop_token = (!request_.stop.ignore_eos && contains(eos_, token.token)) ||
                          contains(request_.stop.stop_token_ids, token.token);
  if (stop_token) {
    outcome.finish = FinishReason::kStop;
    return outcome;
  }
  ++generated_;
  pending_.tokens.push_back(token.token);
  if (request_.sampling.top_logprobs > 0) {
    pending_.logprobs.push_back(TokenLogprobs{token.token, token.logprob, token.top});
  }
  if (decoder_) {
    append_text(decoder_->push(token.token));
    if (matched_stop_) {
      outcome.finish = FinishReason::kStop;
      return outcome;
    }
  }
  if (generated_ >= request_.stop.max_new_tokens) outcome.finish = FinishReason::kLength;
  return outcome;
}

void LiveRequest::append_text(const std::string& piece) {
  if (piece.empty() || matched_stop_) return;
  StopMatcher::Result r = stop_.push(piece);
  pending_.text += r.text;
  if (r.matched) matched_stop_ = r.matched;
}

void LiveRequest::deliver_step() {
  if (!request_.stream || done_ || pending_.tokens.empty()) return;
  TokenDelta delta;
  delta.id = request_.id;
  std::swap(delta, pending_);
  sink_->on_tokens(std::move(delta));
}

Completion LiveRequest::finish(FinishReason reason, Clock::time_point now, Error error) {
  Completion completion;
  completion.id = request_.id;
  if (done_) return completion;
  done_ = true;

  if (reason == FinishReason::kStop || reason == FinishReason::kLength) {
    if (decoder_ && !matched_stop_) append_text(decoder_->flush());
    if (!matched_stop_) pending_.text += stop_.flush();
  }
  if (reason != FinishReason::kCancelled && reason != FinishReason::kError &&
      (!pending_.tokens.empty() || !pending_.text.empty())) {
    sink_->on_tokens(std::move(pending_));
  }

  completion.reason = reason;
  completion.prompt_tokens = static_cast<int>(request_.prompt.size());
  completion.completion_tokens = generated_;
  if (matched_stop_) completion.stop_string = stop_.stop_string(*matched_stop_);
  completion.error = std::move(error);
  Timings& t = completion.timings;
  t.queue = since(request_.arrival, admitted_at_.value_or(now));
  t.prefill = prefill_;
  if (first_token_at_) t.first_token = since(request_.arrival, *first_token_at_);
  t.total = since(request_.arrival, now);
  if (itl_count_ > 0) t.mean_itl = itl_sum_ / itl_count_;
  t.max_itl = itl_max_;
  sink_->on_done(completion);
  return completion;
}

}  // namespace ringserve::serve
