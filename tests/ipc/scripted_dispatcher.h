// A Dispatcher for transport tests: no model, one worker thread that emits
// one token per request per tick, so tests can watch streams, cancel them
// mid-way and count what is still running. Token i of a request is
// prompt[0] + i, its text "<token> ", which lets a test check that every
// event reached the request that owns it. KV is modelled too: a running
// request holds one block per kKvBlockTokens of prompt + output, freed at
// the tick that finishes or cancels it (the scheduler's step).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "scheduler/request.h"

namespace ringserve::testing {

class ScriptedDispatcher final : public serve::Dispatcher {
 public:
  static constexpr int kKvBlockTokens = 16;
  static constexpr int64_t kKvBlocksTotal = int64_t{1} << 24;

  explicit ScriptedDispatcher(std::chrono::microseconds tick = std::chrono::microseconds(200));
  ~ScriptedDispatcher() override;

  Status submit(serve::Request request, std::shared_ptr<serve::RequestSink> sink) override;
  void cancel(uint64_t request_id) override;
  serve::StatsSnapshot stats() const override;
  const engine::EngineInfo& engine_info() const override { return info_; }

  // Stops the worker; unfinished requests get no Done (the server's problem).
  void stop();

  uint64_t cancels_seen() const { return cancels_.load(); }
  size_t active() const;
  // The most KV blocks ever in use at once.
  int64_t kv_blocks_peak() const;

 private:
  struct Running {
    serve::Request request;
    std::shared_ptr<serve::RequestSink> sink;
    int emitted = 0;
    bool cancelled = false;
  };

  void run();
  int64_t kv_blocks_used() const;  // with mutex_ held

  engine::EngineInfo info_;
  std::chrono::microseconds tick_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::unordered_map<uint64_t, Running> running_;
  uint64_t requests_total_ = 0;
  uint64_t completion_tokens_total_ = 0;
  int64_t kv_blocks_peak_ = 0;
  std::atomic<uint64_t> cancels_{0};
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace ringserve::testing
