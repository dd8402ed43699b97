// Pieces every ringctl subcommand shares: connection flags and the sampling
// flags of generate and chat.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ringserve/client/client.h"

namespace ringctl {

struct ConnectArgs {
  std::string socket;  // empty: the default path
  bool no_shm = false;
  int timeout_ms = 120000;
};
void add_connect_flags(CLI::App& app, ConnectArgs& args);
ringserve::Expected<std::unique_ptr<ringserve::Client>> connect(const ConnectArgs& args);

struct SamplingArgs {
  int max_new_tokens = 256;
  float temperature = 0.0f;
  float top_p = 1.0f;
  int top_k = 0;
  int64_t seed = -1;  // < 0: none
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  int top_logprobs = 0;
};
void add_sampling_flags(CLI::App& app, SamplingArgs& args);
ringserve::SamplingParams to_params(const SamplingArgs& args);

// SIGINT/SIGTERM handling: install() (first thing in main, before any
// thread exists) blocks both signals in every thread and waits for them on a
// helper thread. While a Cancel scope is alive the first signal calls its
// action (cancel the running request, which then ends with Done cancelled);
// otherwise, or on a second signal, the process exits with 130.
namespace signals {
void install();
class Cancel {
 public:
  explicit Cancel(std::function<void()> action);
  ~Cancel();
  Cancel(const Cancel&) = delete;
  Cancel& operator=(const Cancel&) = delete;
};
bool fired();
}  // namespace signals

}  // namespace ringctl
