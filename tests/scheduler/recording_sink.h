// A RequestSink that keeps every event, for assertions.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/request.h"

namespace ringserve::serve::testing {

class RecordingSink final : public RequestSink {
 public:
  void on_tokens(TokenDelta delta) override {
    std::lock_guard lock(mutex_);
    if (done_) ++events_after_done_;
    deltas_.push_back(std::move(delta));
  }
  void on_done(Completion completion) override {
    std::lock_guard lock(mutex_);
    if (done_) ++events_after_done_;
    done_ = std::move(completion);
  }

  std::vector<TokenDelta> deltas() const {
    std::lock_guard lock(mutex_);
    return deltas_;
  }
  std::optional<Completion> done() const {
    std::lock_guard lock(mutex_);
    return done_;
  }
  int events_after_done() const {
    std::lock_guard lock(mutex_);
    return events_after_done_;
  }
  std::vector<int32_t> tokens() const {
    std::lock_guard lock(mutex_);
    std::vector<int32_t> out;
    for (const auto& d : deltas_) out.insert(out.end(), d.tokens.begin(), d.tokens.end());
    return out;
  }
  std::string text() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& d : deltas_) out += d.text;
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<TokenDelta> deltas_;
  std::optional<Completion> done_;
  int events_after_done_ = 0;
};

}  // namespace ringserve::serve::testing
