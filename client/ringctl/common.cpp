#include "common.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace ringctl {

void add_connect_flags(CLI::App& app, ConnectArgs& args) {
  app.add_option("--socket", args.socket,
                 "Server socket (default: " + ringserve::Client::default_socket_path() + ")");
  app.add_flag("--no-shm", args.no_shm, "Use the socket only, no shared-memory ring");
  app.add_option("--timeout-ms", args.timeout_ms, "Longest wait for the server's next event")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

ringserve::Expected<std::unique_ptr<ringserve::Client>> connect(const ConnectArgs& args) {
  ringserve::ClientOptions options;
  options.use_shm = !args.no_shm;
  options.client_name = "ringctl";
  options.read_timeout = std::chrono::milliseconds(args.timeout_ms);
  const std::string path =
      args.socket.empty() ? ringserve::Client::default_socket_path() : args.socket;
  auto client = ringserve::Client::connect(path, options);
  if (!client) return ringserve::with_context(std::move(client).error(), path);
  return client;
}

void add_sampling_flags(CLI::App& app, SamplingArgs& args) {
  app.add_option("--max-new-tokens,-n", args.max_new_tokens, "Most tokens to generate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--temperature", args.temperature, "0: greedy")->capture_default_str();
  app.add_option("--top-p", args.top_p, "Nucleus sampling mass")->capture_default_str();
  app.add_option("--top-k", args.top_k, "0: off")->capture_default_str();
  app.add_option("--seed", args.seed, "Sampling seed (default: the server's)");
  app.add_option("--stop", args.stop, "Stop string (repeatable)");
  app.add_option("--stop-token-id", args.stop_token_ids, "Stop token id (repeatable)");
  app.add_flag("--ignore-eos", args.ignore_eos, "Generate past end-of-sequence tokens");
  app.add_option("--top-logprobs", args.top_logprobs, "Alternatives reported per token (0..20)")
      ->check(CLI::Range(0, 20));
}

ringserve::SamplingParams to_params(const SamplingArgs& args) {
  ringserve::SamplingParams p;
  p.max_new_tokens = static_cast<uint32_t>(args.max_new_tokens);
  p.temperature = args.temperature;
  p.top_p = args.top_p;
  p.top_k = static_cast<uint32_t>(std::max(args.top_k, 0));
  if (args.seed >= 0) p.seed = static_cast<uint64_t>(args.seed);
  p.stop_strings = args.stop;
  p.stop_token_ids = args.stop_token_ids;
  p.ignore_eos = args.ignore_eos;
  return p;
}

namespace signals {
namespace {

std::mutex g_mutex;
std::function<void()> g_action;
std::atomic<bool> g_fired{false};

}  // namespace

void install() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      std::function<void()> action;
      {
        std::lock_guard lock(g_mutex);
        if (!g_fired.exchange(true)) action = g_action;
      }
      if (!action) std::_Exit(130);
      action();
    }
  }).detach();
}

Cancel::Cancel(std::function<void()> action) {
  std::lock_guard lock(g_mutex);
  g_action = std::move(action);
  g_fired = false;
}

Cancel::~Cancel() {
  std::lock_guard lock(g_mutex);
  g_action = nullptr;
}

bool fired() {
  return g_fired.load();
}

}  // namespace signals

}  // namespace ringctl
