#include "scripted_dispatcher.h"

#include <algorithm>
#include <string>

namespace ringserve::testing {

ScriptedDispatcher::ScriptedDispatcher(std::chrono::microseconds tick) : tick_(tick) {
  info_.backend = "scripted";
  info_.model_name = "scripted-test-model";
  info_.vocab_size = 1 << 20;
  info_.max_context = 1 << 20;
  info_.max_batch = 1024;
  info_.eos_token_ids = {2};
  worker_ = std::thread([this] { run(); });
}

ScriptedDispatcher::~ScriptedDispatcher() {
  stop();
}

void ScriptedDispatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Status ScriptedDispatcher::submit(serve::Request request,
                                  std::shared_ptr<serve::RequestSink> sink) {
  if (request.prompt.empty()) return make_error(Errc::kInvalidArgument, "empty prompt");
  std::lock_guard lock(mutex_);
  if (stopping_) return make_error(Errc::kUnavailable, "dispatcher stopped");
  if (running_.count(request.id)) {
    return make_error(Errc::kInvalidArgument, "duplicate request id {}", request.id);
  }
  ++requests_total_;
  uint64_t id = request.id;
  running_.emplace(id, Running{std::move(request), std::move(sink)});
  wake_.notify_all();
  return ok();
}

void ScriptedDispatcher::cancel(uint64_t request_id) {
  cancels_.fetch_add(1);
  std::lock_guard lock(mutex_);
  if (auto it = running_.find(request_id); it != running_.end()) it->second.cancelled = true;
}

size_t ScriptedDispatcher::active() const {
  std::lock_guard lock(mutex_);
  return running_.size();
}

int64_t ScriptedDispatcher::kv_blocks_peak() const {
  std::lock_guard lock(mutex_);
  return kv_blocks_peak_;
}

int64_t ScriptedDispatcher::kv_blocks_used() const {
  int64_t used = 0;
  for (const auto& [id, r] : running_) {
    const int64_t tokens = static_cast<int64_t>(r.request.prompt.size()) + r.emitted;
    used += (tokens + kKvBlockTokens - 1) / kKvBlockTokens;
  }
  return used;
}

serve::StatsSnapshot ScriptedDispatcher::stats() const {
  std::lock_guard lock(mutex_);
  serve::StatsSnapshot s;
  s.requests_total = requests_total_;
  s.requests_active = static_cast<uint32_t>(running_.size());
  s.completion_tokens_total = completion_tokens_total_;
  s.kv.blocks_total = kKvBlocksTotal;
  s.kv.blocks_used = kv_blocks_used();
  s.kv.block_tokens = kKvBlockTokens;
  s.engine = info_.backend;
  return s;
}

void ScriptedDispatcher::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (running_.empty()) {
      wake_.wait(lock, [this] { return stopping_ || !running_.empty(); });
      continue;
    }
    // Sinks never block (the contract), so calling them under the lock is
    // safe and keeps the scripted order simple.
    for (auto it = running_.begin(); it != running_.end();) {
      Running& r = it->second;
      serve::Completion done;
      done.id = r.request.id;
      done.prompt_tokens = static_cast<int>(r.request.prompt.size());
      bool finished = false;
      if (r.cancelled) {
        done.reason = serve::FinishReason::kCancelled;
        finished = true;
      } else {
        serve::TokenDelta delta;
        delta.id = r.request.id;
        int32_t token = r.request.prompt.front() + r.emitted;
        delta.tokens.push_back(token);
        delta.text = std::to_string(token) + " ";
        ++r.emitted;
        ++completion_tokens_total_;
        r.sink->on_tokens(std::move(delta));
        if (r.emitted >= r.request.stop.max_new_tokens) {
          done.reason = serve::FinishReason::kLength;
          finished = true;
        }
      }
      if (finished) {
        done.completion_tokens = r.emitted;
        done.timings.total = std::chrono::duration_cast<std::chrono::microseconds>(
            serve::Clock::now() - r.request.arrival);
        r.sink->on_done(std::move(done));
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
    kv_blocks_peak_ = std::max(kv_blocks_peak_, kv_blocks_used());
    wake_.wait_for(lock, tick_, [this] { return stopping_; });
  }
}

}  // namespace ringserve::testing
