#include "config.h"

#include <algorithm>

#include <fmt/format.h>

namespace ringbench {

Config::Mode Config::mode() const {
  if (rate) return Mode::kOpenLoop;
  if (concurrency) return Mode::kClosedLoop;
  return Mode::kBatch;
}

int Config::total_requests() const {
  if (mode() == Mode::kBatch) return requests.value_or(batch * runs);
  return requests.value_or(concurrency.value_or(1) * runs);
}

std::string Config::describe() const {
  std::string load;
  switch (mode()) {
    case Mode::kBatch:
      load = fmt::format("batch {} x {} runs", batch, total_requests() / std::max(batch, 1));
      break;
    case Mode::kClosedLoop:
      load = fmt::format("concurrency {}, {} requests", *concurrency, total_requests());
      break;
    case Mode::kOpenLoop:
      load = fmt::format("Poisson {:.2f} req/s, {} requests", *rate, total_requests());
      break;
  }
  std::string sampling = "greedy";
  if (temperature > 0.0f) {
    sampling = fmt::format("sampled at temperature {:g}", temperature);
    if (top_k > 0) sampling += fmt::format(", top-k {}", top_k);
    if (top_p < 1.0f) sampling += fmt::format(", top-p {:g}", top_p);
  }
  return fmt::format("input {} tokens, output {} tokens, {}, {}, transport {}", input_len,
                     output_len, sampling, load, transport_name(transport));
}

const char* transport_name(Transport t) {
  switch (t) {
    case Transport::kShm:
      return "shm";
    case Transport::kSocket:
      return "socket";
    case Transport::kHttp:
      return "http";
  }
  return "?";
}

nlohmann::json to_json(const Config& c) {
  nlohmann::json j;
  j["input_len"] = c.input_len;
  j["output_len"] = c.output_len;
  j["transport"] = transport_name(c.transport);
  j["warmup"] = c.warmup;
  j["seed"] = c.seed;
  j["requests"] = c.total_requests();
  if (!c.label.empty()) j["label"] = c.label;
  j["sampling"] = {{"temperature", c.temperature}, {"top_p", c.top_p}, {"top_k", c.top_k}};
  switch (c.mode()) {
    case Config::Mode::kBatch:
      j["mode"] = "batch";
      j["batch"] = c.batch;
      j["runs"] = c.total_requests() / std::max(c.batch, 1);
      break;
    case Config::Mode::kClosedLoop:
      j["mode"] = "closed_loop";
      j["concurrency"] = *c.concurrency;
      break;
    case Config::Mode::kOpenLoop:
      j["mode"] = "open_loop";
      j["rate"] = *c.rate;
      break;
  }
  return j;
}

}  // namespace ringbench
