#include "scheduler/scheduler.h"

#include <algorithm>
#include <utility>

#include "scheduler/batch_policy.h"
#include "scheduler/validate.h"
#include "util/log.h"

namespace ringserve::serve {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "?";
}

namespace {

std::chrono::microseconds micros(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d);
}

}  // namespace

Expected<std::unique_ptr<Scheduler>> Scheduler::create(
    std::unique_ptr<engine::Engine> engine, SchedulerOptions options,
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
    std::shared_ptr<const TimeSource> clock) {
  if (!engine) return make_error(Errc::kInvalidArgument, "scheduler needs an engine");
  if (!clock) return make_error(Errc::kInvalidArgument, "scheduler needs a time source");
  RS_TRY_STATUS(validate(options));
  const engine::EngineInfo& info = engine->info();
  if (info.max_batch > 0 && options.max_batch > info.max_batch) {
    log::get("batch")->warn("max batch {} lowered to the engine's {}", options.max_batch,
                            info.max_batch);
    options.max_batch = info.max_batch;
  }
  if (tokenizer && tokenizer->vocab_size() > info.vocab_size) {
    // Harmless (ids above the model's vocabulary are never sampled), but it
    // usually means the tokenizer belongs to another model.
    log::get("batch")->warn("tokenizer vocabulary {} is larger than the model's {}",
                            tokenizer->vocab_size(), info.vocab_size);
  }
  return std::unique_ptr<Scheduler>(
      new Scheduler(std::move(engine), options, std::move(tokenizer), std::move(clock)));
}

Scheduler::Scheduler(std::unique_ptr<engine::Engine> engine, SchedulerOptions options,
                     std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                     std::shared_ptr<const TimeSource> clock)
    : engine_(std::move(engine)),
      info_(engine_->info()),
      options_(options),
      tokenizer_(std::move(tokenizer)),
      clock_(std::move(clock)),
      stats_(options_.max_batch, options_.latency_window, info_.backend) {
  publish_gauges();  // the KV capacity is known before the first step
}

Scheduler::~Scheduler() {
  stop();
}

Status Scheduler::submit(Request request, std::shared_ptr<RequestSink> sink) {
  if (!sink) return make_error(Errc::kInvalidArgument, "request {} has no sink", request.log_id);
  if (draining_.load(std::memory_order_acquire)) {
    return make_error(Errc::kUnavailable, "the server is shutting down");
  }
  RS_TRY_STATUS(validate_request(request, info_, options_));
  {
    std::lock_guard lock(ids_mutex_);
    if (queued_.load(std::memory_order_relaxed) >= options_.max_queue) {
      return make_error(Errc::kResourceExhausted, "{} requests are already waiting",
                        options_.max_queue);
    }
    if (!live_ids_.insert(request.id).second) {
      return make_error(Errc::kInvalidArgument, "request id {} is already in flight", request.id);
    }
    queued_.fetch_add(1, std::memory_order_relaxed);
    outstanding_.fetch_add(1, std::memory_order_acq_rel);
  }
  request.arrival = clock_->now();
  log::get("batch")->debug("req={} queued: {} prompt tokens, max_new_tokens {}", request.log_id,
                           request.prompt.size(), request.stop.max_new_tokens);
  stats_.on_submitted();
  inbox_.push(Inbox::Submission{std::move(request), std::move(sink)});
  return ok();
}

void Scheduler::cancel(uint64_t request_id) {
  inbox_.cancel(request_id);
}

StatsSnapshot Scheduler::stats() const {
  StatsSnapshot s = stats_.snapshot();
  s.queue_depth = static_cast<uint32_t>(queued_.load(std::memory_order_relaxed));
  return s;
}

Scheduler::Progress Scheduler::run_once() {
  Progress progress;
  const Clock::time_point now = clock_->now();
  const uint64_t before = finished_count_;
  intake(inbox_.take(), now);
  progress.admitted = admit(now);
  if (!running_.empty()) {
    step();
    progress.stepped = true;
  } else if (!waiting_.empty()) {
    progress.wake_at =
        decide_admission(
            options_,
            QueueView{waiting_.size(), waiting_.front()->request().arrival, running_.size()}, now)
            .wake_at;
  }
  progress.finished = static_cast<size_t>(finished_count_ - before);
  publish_gauges();
  return progress;
}

void Scheduler::intake(Inbox::Contents contents, Clock::time_point now) {
  for (Inbox::Submission& s : contents.submissions) {
    auto live = std::make_unique<LiveRequest>(std::move(s.request), std::move(s.sink), tokenizer_,
                                              info_.eos_token_ids);
    const Request& r = live->request();
    const int prompt = static_cast<int>(r.prompt.size());
    if (!engine_->fits_ever(prompt, r.stop.max_new_tokens)) {
      const engine::KvUsage kv = engine_->kv_usage();
      queued_.fetch_sub(1, std::memory_order_relaxed);
      finish(std::move(live), FinishReason::kError, now,
             make_error(Errc::kTooLarge,
                        "prompt ({} tokens) + max_new_tokens ({}) can never fit the KV cache ({} "
                        "blocks of {} tokens)",
                        prompt, r.stop.max_new_tokens, kv.blocks_total, kv.block_tokens));
      continue;
    }
    waiting_.push_back(std::move(live));
  }
  if (contents.cancel_all) {
    finish_all(FinishReason::kCancelled, now, Error{});
    return;
  }
  for (uint64_t id : contents.cancels) cancel_one(id, now);
}

void Scheduler::cancel_one(uint64_t id, Clock::time_point now) {
  if (auto it = running_.find(id); it != running_.end()) {
    engine_->release(id);
    std::unique_ptr<LiveRequest> live = std::move(it->second);
    running_.erase(it);
    finish(std::move(live), FinishReason::kCancelled, now);
    return;
  }
  auto it = std::find_if(waiting_.begin(), waiting_.end(),
                         [id](const auto& live) { return live->id() == id; });
  if (it != waiting_.end()) {
    std::unique_ptr<LiveRequest> live = std::move(*it);
    waiting_.erase(it);
    queued_.fetch_sub(1, std::memory_order_relaxed);
    finish(std::move(live), FinishReason::kCancelled, now);
  }
}

size_t Scheduler::admit(Clock::time_point now) {
  if (waiting_.empty()) return 0;
  const AdmissionDecision decision = decide_admission(
      options_, QueueView{waiting_.size(), waiting_.front()->request().arrival, running_.size()},
      now);
  if (!decision.admit) return 0;
  auto log = log::get("batch");
  size_t admitted = 0;
  // Strict FIFO: when the head does not fit the KV cache yet, nobody behind
  // it overtakes it, so a large request cannot be starved by small ones.
  while (!waiting_.empty() && running_.size() < static_cast<size_t>(options_.max_batch)) {
    LiveRequest& head = *waiting_.front();
    const Request& r = head.request();
    const int prompt = static_cast<int>(r.prompt.size());
    if (!engine_->fits_now(prompt, r.stop.max_new_tokens)) {
      log->trace("req={} waits for KV space", head.log_id());
      break;
    }
    Status added =
        engine_->add(engine::SequenceSpec{r.id, r.prompt, r.stop.max_new_tokens, r.sampling});
    if (!added && added.error().code == Errc::kResourceExhausted) break;
    std::unique_ptr<LiveRequest> live = std::move(waiting_.front());
    waiting_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    if (!added) {
      finish(std::move(live), FinishReason::kError, now, std::move(added).error());
      continue;
    }
    live->mark_admitted(now);
    stats_.on_admitted(prompt);
    log->debug("req={} admitted after {} us; {} running", live->log_id(),
               micros(now - r.arrival).count(), running_.size() + 1);
    running_.emplace(live->id(), std::move(live));
    ++admitted;
  }
  return admitted;
}

size_t Scheduler::step() {
  const size_t batch = running_.size();
  const Clock::time_point start = clock_->now();
  Expected<engine::StepResult> result = engine_->step();
  const Clock::time_point end = clock_->now();
  if (!result) {
    // The engine's state is unknown after a failed step; fail every running
    // sequence rather than guess which one broke it.
    log::get("batch")->error("engine step failed with {} sequences: {}", batch,
                             result.error().to_string());
    auto failed = std::exchange(running_, {});
    for (auto& [id, live] : failed) engine_->release(id);
    for (auto& [id, live] : failed) {
      finish(std::move(live), FinishReason::kError, end,
             with_context(result.error(), "engine step"));
    }
    return 0;
  }
  stats_.on_step(batch, micros(end - start), static_cast<int>(result->tokens.size()));
  size_t finished = 0;
  for (const engine::SampledToken& token : result->tokens) {
    auto it = running_.find(token.id);
    if (it == running_.end()) continue;  // released earlier in this loop
    LiveRequest& live = *it->second;
    const LiveRequest::TokenOutcome outcome = live.on_token(token, start, end);
    if (outcome.ttft) stats_.on_ttft(*outcome.ttft);
    if (outcome.itl) stats_.on_itl(*outcome.itl);
    if (outcome.finish) {
      engine_->release(token.id);
      std::unique_ptr<LiveRequest> ended = std::move(it->second);
      running_.erase(it);
      finish(std::move(ended), *outcome.finish, end);
      ++finished;
    }
  }
  for (auto& [id, live] : running_) live->deliver_step();
  return finished;
}

void Scheduler::finish(std::unique_ptr<LiveRequest> ended, FinishReason reason,
                       Clock::time_point now, Error error) {
  publish_gauges();
  LiveRequest& live = *ended;
  const bool failed = reason == FinishReason::kError;
  if (failed) {
    log::get("batch")->warn("req={} failed: {}", live.log_id(), error.to_string());
  }
  const Completion c = live.finish(reason, now, std::move(error));
  ++finished_count_;
  log::get("batch")->debug("req={} done: {} after {} tokens, queue {} us, ttft {} us, total {} us",
                           live.log_id(), finish_reason_name(reason), c.completion_tokens,
                           c.timings.queue.count(), c.timings.first_token.count(),
                           c.timings.total.count());
  {
    std::lock_guard lock(ids_mutex_);
    live_ids_.erase(live.id());
  }
  if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard lock(idle_mutex_);
    idle_cv_.notify_all();
  }
}

void Scheduler::finish_all(FinishReason reason, Clock::time_point now, const Error& error) {
  auto running = std::exchange(running_, {});
  auto waiting = std::exchange(waiting_, {});
  for (auto& [id, live] : running) engine_->release(id);
  queued_.fetch_sub(waiting.size(), std::memory_order_relaxed);
  for (auto& [id, live] : running) finish(std::move(live), reason, now, error);
  for (auto& live : waiting) finish(std::move(live), reason, now, error);
}

void Scheduler::publish_gauges() {
  stats_.set_gauges(static_cast<uint32_t>(waiting_.size()), static_cast<uint32_t>(running_.size()),
                    engine_->kv_usage());
}

void Scheduler::loop() {
  log::get("batch")->info("engine thread started: {} engine, max batch {}, window {} us, policy {}",
                          info_.backend, options_.max_batch, options_.batch_window.count(),
                          batch_policy_name(options_.policy));
  while (!inbox_.stop_requested()) {
    const Progress p = run_once();
    if (p.stepped || p.admitted > 0) continue;
    std::optional<std::chrono::steady_clock::duration> timeout;
    if (p.wake_at) timeout = *p.wake_at - clock_->now();
    inbox_.wait(timeout);
  }
}

void Scheduler::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void Scheduler::begin_drain() {
  draining_.store(true, std::memory_order_release);
  log::get("batch")->info("draining: {} requests outstanding", outstanding());
}

void Scheduler::cancel_all() {
  inbox_.cancel_all();
}

bool Scheduler::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(idle_mutex_);
  return idle_cv_.wait_for(lock, timeout, [this] { return outstanding() == 0; });
}

void Scheduler::stop() {
  std::call_once(stopped_, [this] {
    draining_.store(true, std::memory_order_release);
    inbox_.request_stop();
    if (thread_.joinable()) thread_.join();
    // The engine thread is gone; this thread now owns the engine.
    const Clock::time_point now = clock_->now();
    intake(inbox_.take(), now);
    finish_all(FinishReason::kCancelled, now, Error{});
    publish_gauges();
  });
}

}  // namespace ringserve::serve
