// The plan as people read it: the start-up log and the test output.
#include <fmt/format.h>

#include "offload/byte_size.h"
#include "offload/plan.h"
#include "util/log.h"

namespace ringserve::offload {
namespace {

std::string layer_range(int first, int last) {
  return first == last ? fmt::format("layer {}", first) : fmt::format("layers {}-{}", first, last);
}

}  // namespace

std::vector<std::string> Plan::lines() const {
  std::vector<std::string> out;
  out.push_back(fmt::format("plan ({}, budget {}): GPU {} of {} ({} free)", strategy_name(strategy),
                            format_bytes(budget_bytes), format_bytes(gpu_total_bytes),
                            format_bytes(budget_bytes),
                            format_bytes(budget_bytes - gpu_total_bytes)));

  std::string resident = resident_layers > 0 ? layer_range(0, resident_layers - 1) : "no layers";
  if (lm_head_resident) resident += ", lm_head";
  if (embedding_resident) resident += ", embedding";
  out.push_back(fmt::format("resident: {} ({})", resident,
                            format_bytes(resident_layer_bytes + lm_head_bytes +
                                         embedding_device_bytes + final_norm_bytes)));

  if (streamed_layers() > 0) {
    out.push_back(fmt::format("{}: {} ({}/step, {} per layer)",
                              strategy == Strategy::kStream ? "streamed" : "zero-copy",
                              layer_range(resident_layers, num_layers - 1),
                              format_bytes(streamed_bytes_per_step), format_bytes(layer_bytes)));
  } else {
    out.push_back("streamed: nothing");
  }
  if (!embedding_resident)
    out.push_back(fmt::format("embedding in host memory: {} pinned, {} per token crosses the link",
                              format_bytes(host_pinned_bytes - streamed_bytes_per_step),
                              format_bytes(embedding_bytes_per_token)));
  if (ring_slots > 0)
    out.push_back(fmt::format("ring: {} x {} = {} (layer i -> slot (i - {}) mod {})", ring_slots,
                              format_bytes(ring_slot_bytes), format_bytes(ring_bytes),
                              resident_layers, ring_slots));
  out.push_back(
      fmt::format("KV {}; workspace {}{}; host pinned {}", format_bytes(kv_bytes),
                  format_bytes(workspace_bytes),
                  extra_bytes > 0 ? fmt::format("; other {}", format_bytes(extra_bytes)) : "",
                  format_bytes(host_pinned_bytes)));
  return out;
}

std::string Plan::to_string() const {
  std::string s;
  for (const std::string& line : lines()) {
    if (!s.empty()) s += '\n';
    s += line;
  }
  return s;
}

std::string Plan::floor_line(double link_gbps, int batch) const {
  const double t = floor_seconds(link_gbps, batch);
  if (t <= 0.0 || streamed_bytes_per_step == 0)
    return fmt::format(
        "floor at {:.1f} GB/s: no layer crosses the link ({} of embedding rows per "
        "step), bound by device memory",
        link_gbps, format_bytes(link_bytes_per_step(batch)));
  return fmt::format(
      "floor at {:.1f} GB/s: {} crossing per step = {:.2f} ms/step, {:.1f} tok/s at "
      "batch {}",
      link_gbps, format_bytes(link_bytes_per_step(batch)), t * 1e3, batch / t, batch);
}

void log_plan(const Plan& plan) {
  auto logger = log::get("offload");
  for (const std::string& line : plan.lines()) logger->info("{}", line);
}

}  // namespace ringserve::offload
