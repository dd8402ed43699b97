#include "offload/plan.h"

#include <algorithm>

#include "offload/byte_size.h"

namespace ringserve::offload {
namespace {

struct Placement {
  int resident_layers = 0;
  bool embedding_resident = false;
};

// GPU bytes that do not depend on the placement.
uint64_t fixed_bytes(const ModelFootprint& f, const PlanRequest& r) {
  return r.kv_bytes + r.workspace_bytes + r.extra_resident_bytes + f.lm_head_bytes +
         f.final_norm_bytes;
}

int ring_slots_for(const ModelFootprint& f, const PlanRequest& r, int resident_layers) {
  const int streamed = f.num_layers - resident_layers;
  if (r.strategy != Strategy::kStream || streamed == 0) return 0;
  return std::min(streamed, r.ring_slots);
}

uint64_t gpu_bytes(const ModelFootprint& f, const PlanRequest& r, const Placement& p) {
  const uint64_t layers = static_cast<uint64_t>(p.resident_layers) +
                          static_cast<uint64_t>(ring_slots_for(f, r, p.resident_layers));
  return fixed_bytes(f, r) + layers * f.layer_bytes +
         (p.embedding_resident ? f.embedding_bytes : 0);
}

Plan describe(const ModelFootprint& f, const PlanRequest& r, const Placement& p) {
  Plan plan;
  plan.strategy = r.strategy;
  plan.num_layers = f.num_layers;
  plan.resident_layers = p.resident_layers;
  plan.embedding_resident = p.embedding_resident;
  plan.ring_slots = ring_slots_for(f, r, p.resident_layers);
  plan.ring_slot_bytes = plan.ring_slots > 0 ? f.layer_bytes : 0;
  plan.max_batch = std::max(r.max_batch, 1);
  plan.budget_bytes = r.gpu_budget_bytes;
  plan.layer_bytes = f.layer_bytes;
  plan.resident_layer_bytes = static_cast<uint64_t>(p.resident_layers) * f.layer_bytes;
  plan.lm_head_bytes = f.lm_head_bytes;
  plan.embedding_device_bytes = p.embedding_resident ? f.embedding_bytes : 0;
  plan.final_norm_bytes = f.final_norm_bytes;
  plan.kv_bytes = r.kv_bytes;
  plan.workspace_bytes = r.workspace_bytes;
  plan.ring_bytes = static_cast<uint64_t>(plan.ring_slots) * plan.ring_slot_bytes;
  plan.extra_bytes = r.extra_resident_bytes;
  plan.gpu_total_bytes = gpu_bytes(f, r, p);
  const uint64_t streamed = static_cast<uint64_t>(plan.streamed_layers()) * f.layer_bytes;
  plan.streamed_bytes_per_step = streamed;
  plan.host_pinned_bytes = streamed + (p.embedding_resident ? 0 : f.embedding_bytes);
  plan.embedding_bytes_per_token = p.embedding_resident ? 0 : f.embedding_row_bytes;
  return plan;
}

Status check_request(const ModelFootprint& f, const PlanRequest& r) {
  if (f.num_layers <= 0 || f.layer_bytes == 0)
    return make_error(Errc::kInvalidArgument, "model footprint is empty");
  if (r.gpu_budget_bytes == 0)
    return make_error(Errc::kInvalidArgument, "--gpu-memory must be more than 0 bytes");
  if (r.kv_bytes == 0)
    return make_error(Errc::kInvalidArgument, "the KV pool must be more than 0 bytes");
  if (r.strategy == Strategy::kStream && (r.ring_slots < 2 || r.ring_slots > 4))
    return make_error(Errc::kInvalidArgument,
                      "stream offload needs 2 to 4 ring buffers (double or triple buffering), "
                      "not {}",
                      r.ring_slots);
  return ok();
}

}  // namespace

int Plan::ring_slot(int layer) const {
  if (strategy != Strategy::kStream || !is_streamed(layer) || ring_slots == 0) return -1;
  return (layer - resident_layers) % ring_slots;
}

uint64_t Plan::link_bytes_per_step(int batch) const {
  return streamed_bytes_per_step +
         static_cast<uint64_t>(std::max(batch, 1)) * embedding_bytes_per_token;
}

double Plan::floor_seconds(double link_gbps, int batch) const {
  if (!(link_gbps > 0)) return 0.0;
  return static_cast<double>(link_bytes_per_step(batch)) / (link_gbps * 1e9);
}

uint64_t minimum_budget(const ModelFootprint& f, const PlanRequest& r) {
  // Everything that streams, streams; for stream the ring still costs
  // min(L, N) layers, which makes streaming all layers no cheaper than
  // keeping the first L - N resident.
  return gpu_bytes(f, r, Placement{0, false});
}

Expected<Plan> make_plan(const ModelFootprint& f, const PlanRequest& r) {
  RS_TRY_STATUS(check_request(f, r));
  const uint64_t budget = r.gpu_budget_bytes;
  const int L = f.num_layers;

  if (gpu_bytes(f, r, Placement{L, true}) <= budget) return describe(f, r, Placement{L, true});

  // Largest resident prefix with the embedding in host memory; gpu_bytes is
  // not monotonic in r for stream (a ring slot costs as much as a resident
  // layer), so take the largest r that fits and prefer fewer streamed layers.
  for (int resident = L; resident >= 0; --resident) {
    Placement p{resident, false};
    if (gpu_bytes(f, r, p) > budget) continue;
    // A small model's table may fit in what the layers leave over.
    Placement with_embedding{resident, true};
    if (gpu_bytes(f, r, with_embedding) <= budget) p = with_embedding;
    return describe(f, r, p);
  }

  const int slots = ring_slots_for(f, r, 0);
  return make_error(
      Errc::kResourceExhausted,
      "--gpu-memory {} ({} bytes) cannot hold the minimum of {} for {} offload: KV pool {} + "
      "workspace {} + lm_head {} (always resident) + final norm {}{}{}; give at least {} bytes "
      "or shrink the KV pool (max batch x max context)",
      format_bytes(budget), budget, format_bytes(minimum_budget(f, r)), strategy_name(r.strategy),
      format_bytes(r.kv_bytes), format_bytes(r.workspace_bytes), format_bytes(f.lm_head_bytes),
      format_bytes(f.final_norm_bytes),
      slots > 0 ? fmt::format(" + ring {} x {}", slots, format_bytes(f.layer_bytes)) : "",
      r.extra_resident_bytes > 0 ? fmt::format(" + other {}", format_bytes(r.extra_resident_bytes))
                                 : "",
      minimum_budget(f, r));
}

}  // namespace ringserve::offload
