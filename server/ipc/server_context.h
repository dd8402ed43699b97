// State every session of one Server shares: its settings, the dispatcher
// and tokenizer it hands requests to, and server-wide counters.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include <spdlog/spdlog.h>

#include "ipc/edge_convert.h"
#include "ipc/options.h"
#include "ringserve/protocol/codec.h"
#include "scheduler/request.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::ipc {

struct ServerContext {
  ServerContext(ServerOptions o, serve::Dispatcher& d,
                std::shared_ptr<const tokenizer::Tokenizer> t)
      : options(std::move(o)), dispatcher(d), tokenizer(std::move(t)) {
    limits.max_frame_bytes = options.max_frame_bytes;
    edge.max_prompt_tokens = options.max_prompt_tokens;
  }

  const ServerOptions options;
  serve::Dispatcher& dispatcher;
  const std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
  std::shared_ptr<spdlog::logger> log;
  protocol::DecodeLimits limits;
  EdgeLimits edge;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  // Request ids handed to the dispatcher: unique across all sessions.
  std::atomic<uint64_t> next_request_id{1};
  std::atomic<uint32_t> sessions{0};
  // Requests submitted and not yet answered with Done (all sessions).
  std::atomic<int64_t> inflight{0};
};

}  // namespace ringserve::ipc
