// A scheduler over a ScriptedEngine on a virtual clock, driven by run_once().
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "recording_sink.h"
#include "scheduler/scheduler.h"
#include "scripted_engine.h"

namespace ringserve::serve::testing {

class SchedulerTest : public ::testing::Test {
 protected:
  void make(SchedulerOptions options = {}, ScriptedEngineOptions engine_options = {},
            std::shared_ptr<const tokenizer::Tokenizer> tokenizer = nullptr) {
    auto engine = std::make_unique<ScriptedEngine>(engine_options, clock_.get());
    engine_ = engine.get();
    auto created = Scheduler::create(std::move(engine), options, std::move(tokenizer), clock_);
    ASSERT_TRUE(created) << created.error().to_string();
    sut_ = std::move(created).value();
  }

  Request request(uint64_t id, int prompt_tokens = 8, int max_new_tokens = 4) {
    Request r;
    r.id = id;
    r.log_id = "test:" + std::to_string(id);
    for (int i = 0; i < prompt_tokens; ++i) r.prompt.push_back(10 + i);
    r.stop.max_new_tokens = max_new_tokens;
    return r;
  }

  std::shared_ptr<RecordingSink> submit(Request r) {
    auto sink = std::make_shared<RecordingSink>();
    Status s = sut_->submit(std::move(r), sink);
    EXPECT_TRUE(s) << s.error().to_string();
    return sink;
  }

  // Runs the loop until nothing is outstanding (bounded).
  void run_to_completion(int max_iterations = 10'000) {
    for (int i = 0; i < max_iterations && sut_->outstanding() > 0; ++i) {
      Scheduler::Progress p = sut_->run_once();
      if (!p.stepped && p.wake_at) clock_->advance(*p.wake_at - clock_->now());
    }
    ASSERT_EQ(sut_->outstanding(), 0u);
  }

  std::shared_ptr<VirtualClock> clock_ = std::make_shared<VirtualClock>();
  ScriptedEngine* engine_ = nullptr;
  std::unique_ptr<Scheduler> sut_;
};

}  // namespace ringserve::serve::testing
