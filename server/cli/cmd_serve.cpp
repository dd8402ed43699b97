// `ringserve serve`: load the model and tokenizer, build the engine, start
// the batcher's engine thread and the Unix-socket server, and run until
// SIGINT/SIGTERM; then stop accepting, let in-flight requests finish within
// the grace period, cancel the rest (Done reason cancelled), remove the
// socket file and exit 0.
//
// With --http HOST:PORT the OpenAI-compatible endpoint runs on its own
// io_context and thread. It listens before the model loads (GET /health
// answers 503 "loading"), then serves through the same scheduler.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "cli/commands.h"
#include "engine/engine_options.h"
#include "engine/factory.h"
#include "http/http_server.h"
#include "http/options.h"
#include "ipc/options.h"
#include "ipc/server.h"
#include "model/loader.h"
#include "offload/byte_size.h"
#include "offload/strategy.h"
#include "preflight/startup.h"
#include "scheduler/options.h"
#include "scheduler/scheduler.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

namespace ringserve::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string backend = "auto";
  std::string tokenizer;
  int threads = 0;
  int io_threads = 1;
  int max_context = 0;
  int64_t kv_blocks = 0;
  std::string gpu_memory;  // "" or a size, e.g. 8GiB
  std::string offload = "auto";
  int ring_slots = 2;
  std::string pipeline = "graphs";
  log::Options log;
  serve::SchedulerOptions scheduler;
  ipc::ServerOptions ipc;
  preflight::StartupOptions preflight;
  http::HttpOptions http;
};

// The /metrics label for the start-up preflight: ok, warn, fail or skipped.
std::string preflight_label(const preflight::StartupOptions& options,
                            const preflight::StartupResult& result) {
  if (options.mode == preflight::StartupMode::kOff ||
      result.verdict.rfind("preflight could not run", 0) == 0) {
    return "skipped";
  }
  switch (result.exit_status) {
    case 0:
      return "ok";
    case 1:
      return "warn";
    default:
      return "fail";
  }
}

// The HTTP endpoint's own io_context and thread, up from before the model
// loads until the scheduler has stopped.
class HttpFrontend {
 public:
  ~HttpFrontend() { stop(); }

  Status start(const http::HttpOptions& options) {
    server_ = RS_TRY(http::HttpServer::create(io_, options));
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
    return ok();
  }
  http::HttpServer* operator->() { return server_.get(); }
  explicit operator bool() const { return server_ != nullptr; }

  void stop_accepting() {
    if (server_) server_->stop();
  }
  // After the scheduler has stopped: its last events (Done cancelled) are
  // posted to the sessions; wait (at most 2 s) until every response is
  // written, then drop the remaining (idle keep-alive) connections.
  void stop() {
    if (!thread_.joinable()) return;
    server_->stop();
    work_.reset();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (server_->busy_sessions() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    io_.stop();
    thread_.join();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  std::shared_ptr<http::HttpServer> server_;
  std::thread thread_;
};

// --tokenizer, else tokenizer.json(.gz) beside the weights. Synthetic models
// have none unless given one: they serve token-id prompts only.
Expected<std::shared_ptr<const tokenizer::Tokenizer>> find_tokenizer(const ServeArgs& args) {
  std::filesystem::path path = args.tokenizer;
  if (path.empty() && std::filesystem::is_directory(args.model)) {
    for (const char* name : {"tokenizer.json", "tokenizer.json.gz"}) {
      if (std::filesystem::exists(std::filesystem::path(args.model) / name)) {
        path = std::filesystem::path(args.model) / name;
        break;
      }
    }
  }
  if (path.empty()) return std::shared_ptr<const tokenizer::Tokenizer>();
  auto loaded = tokenizer::Tokenizer::load(path);
  if (!loaded) return with_context(std::move(loaded).error(), "loading the tokenizer");
  return std::move(loaded).value();
}

Status serve(ServeArgs& args) {
  log::configure(args.log);
  auto log = log::get("main");
  const auto load_start = std::chrono::steady_clock::now();
  // A bad socket option is reported now, not after a minute of loading.
  RS_TRY_STATUS(ipc::validate(args.ipc));

  // Up before the model loads. Once set_backend() has run, stop it before
  // the scheduler is destroyed: sessions call the scheduler until then.
  HttpFrontend http_frontend;
  if (!args.http.listen.empty()) {
    args.http.max_prompt_tokens = args.ipc.max_prompt_tokens;
    RS_TRY_STATUS(http_frontend.start(args.http));
  }

  const preflight::StartupResult pre = RS_TRY(preflight::run_at_startup(args.preflight));
  log->info("preflight: {}", pre.verdict);
  if (http_frontend) http_frontend->set_preflight_verdict(preflight_label(args.preflight, pre));

  engine::EngineOptions engine_options;
  engine_options.backend = RS_TRY(engine::parse_backend(args.backend));
  engine_options.max_batch = args.scheduler.max_batch;
  engine_options.max_context = args.max_context;
  engine_options.kv_blocks = args.kv_blocks;
  engine_options.threads = args.threads;
  if (!args.gpu_memory.empty())
    engine_options.gpu_memory_bytes = RS_TRY(offload::parse_byte_size(args.gpu_memory));
  engine_options.offload = RS_TRY(offload::parse_offload_mode(args.offload));
  engine_options.ring_slots = args.ring_slots;
  engine_options.pipeline = RS_TRY(engine::parse_pipeline(args.pipeline));

  std::shared_ptr<const tokenizer::Tokenizer> tok = RS_TRY(find_tokenizer(args));
  if (tok) {
    log->info("tokenizer: {} tokens", tok->vocab_size());
  } else {
    log->info("no tokenizer: token-id prompts only, events carry no text");
  }

  model::LoadStats load_stats;
  model::LoadOptions load_options;
  load_options.threads = args.threads;
  load_options.stats = &load_stats;
  std::unique_ptr<engine::Engine> engine =
      RS_TRY(engine::load_engine(engine_options, args.model, load_options));
  const engine::EngineInfo& info = engine->info();
  const std::string model_name = info.model_name;
  log->info("model {} loaded in {:.2f} s", model_name,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
  if (!load_stats.format.empty())
    log->info("weights read as {} in {:.2f} s ({:.2f} GB/s)", load_stats.format, load_stats.seconds,
              load_stats.gb_per_s());
  const engine::KvUsage kv = engine->kv_usage();
  log->info("engine {}: max batch {}, context {}, KV {} blocks of {} tokens", info.backend,
            info.max_batch, info.max_context, kv.blocks_total, kv.block_tokens);

  std::unique_ptr<serve::Scheduler> scheduler =
      RS_TRY(serve::Scheduler::create(std::move(engine), args.scheduler, tok));
  scheduler->start();
  if (http_frontend) {
    http_frontend->set_load_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
    http_frontend->set_backend(scheduler.get(), tok, model_name);
  }

  boost::asio::io_context io;
  ipc::Server server(io, args.ipc, *scheduler, tok);
  if (Status started = server.start(); !started) {
    scheduler->stop();
    http_frontend.stop();
    return with_context(std::move(started).error(), "starting the server");
  }

  auto work = boost::asio::make_work_guard(io);
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  // One grace period for everything in flight, socket and HTTP alike.
  std::chrono::steady_clock::time_point grace_ends = std::chrono::steady_clock::time_point::max();
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    grace_ends = std::chrono::steady_clock::now() + args.ipc.shutdown_grace;
    log->info("signal {}: stop accepting, finishing {} requests within {} ms", signo,
              scheduler->outstanding(), args.ipc.shutdown_grace.count());
    http_frontend.stop_accepting();
    // A second signal does not wait for the grace period.
    signals.async_wait([&](const boost::system::error_code& ec2, int) {
      if (!ec2) scheduler->cancel_all();
    });
    server.shutdown(args.ipc.shutdown_grace, [&] {
      scheduler->begin_drain();
      signals.cancel();
      work.reset();
    });
  });

  std::printf("ringserve: listening on %s\n", server.socket_path().c_str());
  std::fflush(stdout);
  log->info("ready: {} engine, max batch {}, window {} us, policy {}", info.backend,
            args.scheduler.max_batch, args.scheduler.batch_window.count(),
            serve::batch_policy_name(args.scheduler.policy));

  std::vector<std::thread> io_threads;
  for (int i = 1; i < args.io_threads; ++i) io_threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : io_threads) t.join();

  // HTTP requests get what is left of the same grace period (the socket's
  // part ends early when no socket request was in flight).
  const auto grace_left = std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
      grace_ends - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{}));
  if (http_frontend && !scheduler->wait_idle(grace_left)) {
    log->info("grace period over: cancelling {} HTTP requests", scheduler->outstanding());
  }
  scheduler->stop();
  http_frontend.stop();
  log->info("stopped");
  return ok();
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ServeArgs>();
  auto* sub = app.add_subcommand("serve", "Serve a model over a Unix socket and shared memory");
  sub->add_option("--model", args->model, "Model directory, or synthetic:NAME")->required();
  sub->add_option("--backend", args->backend, "Engine: cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  sub->add_option("--tokenizer", args->tokenizer,
                  "tokenizer.json(.gz); default: the one in the model directory");
  sub->add_option("--threads", args->threads, "CPU threads for the engine and loading (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--io-threads", args->io_threads, "Threads running the socket server")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--max-context", args->max_context,
                  "Longest prompt + generation per sequence (0: the model's maximum)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--kv-blocks", args->kv_blocks, "KV cache blocks (0: sized by the engine)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--log-level", args->log.level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  sub->add_flag("--log-json", args->log.json, "One JSON object per log line");
  sub->add_option("--gpu-memory", args->gpu_memory,
                  "Cap on what the CUDA engine allocates on the GPU, e.g. 8GiB; layers that do "
                  "not fit stay in pinned host memory (default: no cap)");
  sub->add_option("--offload", args->offload,
                  "How offloaded layers reach the GPU: stream (copied ahead through a ring), "
                  "zerocopy (read in place) or auto (measured at start-up)")
      ->check(CLI::IsMember({"stream", "zerocopy", "auto"}))
      ->capture_default_str();
  sub->add_option("--ring-slots", args->ring_slots,
                  "--offload stream: layer buffers in the device ring (2: double, 3: triple)")
      ->check(CLI::Range(2, 4))
      ->capture_default_str();
  sub->add_option("--pipeline", args->pipeline,
                  "Host-device pipeline (CUDA): naive (pageable, synchronous, no graphs), pinned, "
                  "async (overlapped copies) or graphs (async + CUDA graphs)")
      ->check(CLI::IsMember({"naive", "pinned", "async", "graphs"}))
      ->capture_default_str();
  serve::add_scheduler_flags(*sub, args->scheduler);
  ipc::add_cli_flags(*sub, args->ipc);
  preflight::add_startup_flags(*sub, args->preflight);
  http::add_cli_flags(*sub, args->http);
  sub->callback([args, &exit_code] {
    Status s = serve(*args);
    if (!s) {
      std::fprintf(stderr, "ringserve serve: %s\n", s.error().to_string().c_str());
      exit_code = 1;
      return;
    }
    exit_code = 0;
  });
}

}  // namespace ringserve::cli
