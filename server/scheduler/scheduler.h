// The dynamic batcher. One engine thread owns the engine; transports hand it
// requests through submit()/cancel() (any thread) and get events back on
// their RequestSink, called from the engine thread (sinks post to their own
// executors; the engine thread never touches Asio objects).
//
// The loop is steppable: run_once() does one iteration (take new requests
// and cancellations, admit per the batch policy, run at most one engine
// step, deliver events), so tests drive it on a virtual TimeSource; start()
// runs the same iteration on the engine thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "engine/engine.h"
#include "scheduler/inbox.h"
#include "scheduler/live_request.h"
#include "scheduler/options.h"
#include "scheduler/request.h"
#include "scheduler/stats.h"
#include "scheduler/time_source.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::serve {

class Scheduler final : public Dispatcher {
 public:
  // The effective max batch is min(options.max_batch, engine max_batch).
  static Expected<std::unique_ptr<Scheduler>> create(
      std::unique_ptr<engine::Engine> engine, SchedulerOptions options,
      std::shared_ptr<const tokenizer::Tokenizer> tokenizer = nullptr,
      std::shared_ptr<const TimeSource> clock = std::make_shared<SteadyTimeSource>());

  // Stops the engine thread; requests still outstanding get Done cancelled.
  ~Scheduler() override;

  // Dispatcher (thread-safe). submit() stamps the arrival time from the
  // TimeSource, validates, and queues; errors: see validate_request(), plus
  // kResourceExhausted (queue full), kUnavailable (draining), duplicate id.
  Status submit(Request request, std::shared_ptr<RequestSink> sink) override;
  void cancel(uint64_t request_id) override;
  StatsSnapshot stats() const override;
  const engine::EngineInfo& engine_info() const override { return info_; }

  // --- Engine thread -------------------------------------------------------
  struct Progress {
    size_t admitted = 0;
    bool stepped = false;
    size_t finished = 0;
    // Nothing ran; the earliest time the loop must look again (a batch
    // window closing). Empty: sleep until new work arrives.
    std::optional<Clock::time_point> wake_at;
  };
  // One iteration of the loop. Call only from the thread that owns the
  // engine (the test, or the thread start() spawned).
  Progress run_once();

  // --- Lifecycle (any thread) ----------------------------------------------
  void start();
  // New submissions are refused with kUnavailable; queued and running
  // requests are still served.
  void begin_drain();
  // Every queued and running request finishes with Done cancelled.
  void cancel_all();
  // Waits until no request is queued or running; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout);
  // Requests accepted by submit() and not yet done.
  size_t outstanding() const { return outstanding_.load(std::memory_order_acquire); }
  // Joins the engine thread, then cancels whatever is left. Idempotent.
  void stop();

 private:
  Scheduler(std::unique_ptr<engine::Engine> engine, SchedulerOptions options,
            std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
            std::shared_ptr<const TimeSource> clock);

  void intake(Inbox::Contents contents, Clock::time_point now);
  void cancel_one(uint64_t id, Clock::time_point now);
  size_t admit(Clock::time_point now);
  size_t step();
  // Ends a request the caller has already taken out of waiting_/running_
  // (and whose engine sequence it has released): publishes the gauges, then
  // sends the Done, so a client that reads Stats after its Done never sees
  // the request or its KV blocks still counted.
  void finish(std::unique_ptr<LiveRequest> live, FinishReason reason, Clock::time_point now,
              Error error = {});
  void finish_all(FinishReason reason, Clock::time_point now, const Error& error);
  // Queue depth, running sequences and KV usage into the Stats.
  void publish_gauges();
  void loop();

  std::unique_ptr<engine::Engine> engine_;
  const engine::EngineInfo info_;
  SchedulerOptions options_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  std::shared_ptr<const TimeSource> clock_;
  Inbox inbox_;
  StatsRecorder stats_;

  // Engine-thread state.
  std::deque<std::unique_ptr<LiveRequest>> waiting_;
  std::unordered_map<uint64_t, std::unique_ptr<LiveRequest>> running_;
  uint64_t finished_count_ = 0;

  // Shared with submitting threads.
  std::mutex ids_mutex_;
  std::unordered_set<uint64_t> live_ids_;
  std::atomic<bool> draining_{false};
  std::atomic<size_t> queued_{0};
  std::atomic<size_t> outstanding_{0};
  std::mutex idle_mutex_;
  std::condition_variable idle_cv_;

  std::thread thread_;
  std::once_flag stopped_;
};

}  // namespace ringserve::serve
