// Test doubles for the HTTP suite (tests only): a byte-level tokenizer and a
// scripted dispatcher that "generates" numbered words on its own thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "scheduler/request.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::testing {

// One token per byte (ids 0..255) plus nothing else: enough to carry text
// through the HTTP layer and back.
class ByteTokenizer final : public tokenizer::Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool = true) const override {
    std::vector<int32_t> ids;
    for (unsigned char c : text) ids.push_back(c);
    return ids;
  }
  std::string decode(std::span<const int32_t> ids, bool = false) const override {
    std::string out;
    for (int32_t id : ids)
      if (id >= 0 && id < 256) out += static_cast<char>(id);
    return out;
  }
  std::optional<int32_t> token_to_id(std::string_view) const override { return std::nullopt; }
  int32_t vocab_size() const override { return 256; }
  bool is_special(int32_t) const override { return false; }
};

// Each request yields `script` (one delta per element), then Done(length or
// stop). A request is "running" until done; beyond max_running, submit()
// answers kResourceExhausted (the scheduler's queue-full error).
class ScriptedDispatcher final : public serve::Dispatcher {
 public:
  explicit ScriptedDispatcher(std::vector<std::string> script, int max_context = 1024,
                              size_t max_running = 8,
                              std::chrono::milliseconds delay = std::chrono::milliseconds(2));
  ~ScriptedDispatcher() override;

  Status submit(serve::Request request, std::shared_ptr<serve::RequestSink> sink) override;
  void cancel(uint64_t id) override;
  serve::StatsSnapshot stats() const override;
  const engine::EngineInfo& engine_info() const override { return info_; }

  std::set<uint64_t> cancelled() const;
  serve::Request last_request() const;
  size_t running() const;

 private:
  struct Job {
    serve::Request request;
    std::shared_ptr<serve::RequestSink> sink;
    size_t next = 0;
    bool cancelled = false;
  };
  void loop();

  std::vector<std::string> script_;
  size_t max_running_;
  std::chrono::milliseconds delay_;
  engine::EngineInfo info_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, Job> jobs_;
  std::set<uint64_t> cancelled_;
  serve::Request last_;
  uint64_t total_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ringserve::testing
