#include "fake_backend.h"

namespace ringserve::testing {

ScriptedDispatcher::ScriptedDispatcher(std::vector<std::string> script, int max_context,
                                       size_t max_running, std::chrono::milliseconds delay)
    : script_(std::move(script)), max_running_(max_running), delay_(delay) {
  info_.backend = "scripted";
  info_.model_name = "scripted-model";
  info_.vocab_size = 256;
  info_.max_context = max_context;
  info_.max_batch = 4;
  thread_ = std::thread([this] { loop(); });
}

ScriptedDispatcher::~ScriptedDispatcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status ScriptedDispatcher::submit(serve::Request request,
                                  std::shared_ptr<serve::RequestSink> sink) {
  std::lock_guard lock(mutex_);
  if (jobs_.size() >= max_running_) return make_error(Errc::kResourceExhausted, "queue is full");
  if (static_cast<int>(request.prompt.size()) + request.stop.max_new_tokens > info_.max_context) {
    return make_error(Errc::kTooLarge, "prompt + max_new_tokens exceed the context");
  }
  last_ = request;
  ++total_;
  const uint64_t id = request.id;
  jobs_[id] = Job{std::move(request), std::move(sink)};
  cv_.notify_all();
  return ok();
}

void ScriptedDispatcher::cancel(uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  it->second.cancelled = true;
  cancelled_.insert(id);
  cv_.notify_all();
}

serve::StatsSnapshot ScriptedDispatcher::stats() const {
  std::lock_guard lock(mutex_);
  serve::StatsSnapshot s;
  s.requests_total = total_;
  s.requests_active = static_cast<uint32_t>(jobs_.size());
  s.batch_size_histogram = {0, 3, 1};
  s.engine = "scripted";
  s.ttft_histogram.observe(0.004);
  s.itl_histogram.observe(0.0007);
  return s;
}

std::set<uint64_t> ScriptedDispatcher::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

serve::Request ScriptedDispatcher::last_request() const {
  std::lock_guard lock(mutex_);
  return last_;
}

size_t ScriptedDispatcher::running() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

void ScriptedDispatcher::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (jobs_.empty()) {
      cv_.wait(lock);
      continue;
    }
    // One "step": every job emits its next delta, or finishes.
    std::vector<std::pair<std::shared_ptr<serve::RequestSink>, serve::TokenDelta>> deltas;
    std::vector<std::pair<std::shared_ptr<serve::RequestSink>, serve::Completion>> dones;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      Job& job = it->second;
      const size_t limit = std::min<size_t>(script_.size(), job.request.stop.max_new_tokens);
      if (job.cancelled || job.next >= limit) {
        serve::Completion done;
        done.id = job.request.id;
        done.reason = job.cancelled ? serve::FinishReason::kCancelled
                      : job.next >= static_cast<size_t>(job.request.stop.max_new_tokens)
                          ? serve::FinishReason::kLength
                          : serve::FinishReason::kStop;
        done.prompt_tokens = static_cast<int>(job.request.prompt.size());
        done.completion_tokens = static_cast<int>(job.next);
        dones.emplace_back(job.sink, std::move(done));
        it = jobs_.erase(it);
        continue;
      }
      serve::TokenDelta delta;
      delta.id = job.request.id;
      delta.tokens = {static_cast<int32_t>(job.next)};
      delta.text = script_[job.next];
      if (job.request.sampling.top_logprobs > 0) {
        serve::TokenLogprobs lp;
        lp.token = 'a';
        lp.logprob = -0.5f;
        for (int k = 0; k < job.request.sampling.top_logprobs; ++k)
          lp.top.push_back({'a' + k, -0.5f - k});
        delta.logprobs.push_back(lp);
      }
      ++job.next;
      deltas.emplace_back(job.sink, std::move(delta));
      ++it;
    }
    lock.unlock();
    for (auto& [sink, d] : deltas) sink->on_tokens(std::move(d));
    for (auto& [sink, d] : dones) sink->on_done(std::move(d));
    std::this_thread::sleep_for(delay_);
    lock.lock();
  }
  for (auto& [id, job] : jobs_) {
    serve::Completion done;
    done.id = id;
    done.reason = serve::FinishReason::kCancelled;
    job.sink->on_done(std::move(done));
  }
}

}  // namespace ringserve::testing
