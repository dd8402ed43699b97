// The weight placement plan for a GPU memory budget (--gpu-memory).
//
// Policy, in the order the planner gives memory up:
//  1. The KV pool, the workspace and anything the caller pins on the GPU
//     (extra_resident_bytes) come first: without them nothing runs.
//  2. lm_head always stays resident. It is read every step by every
//     sequence, like a layer, but it is 2.3x a layer of the 7B (545 MB vs
//     233 MB): streaming it would size every ring buffer to it, costing more
//     memory in the ring than streaming frees, and it sits at the end of the
//     step where nothing is left to overlap its copy with.
//  3. The token embedding leaves first: a step reads one 7 kB row per
//     sequence, so keeping the 1.09 GB table in host memory costs almost no
//     link time (the rows are gathered from mapped host memory).
//  4. Then layers, from the last one backwards: the GPU keeps a contiguous
//     prefix 0..r-1 and the suffix r..L-1 streams. Streaming costs the same
//     bytes per step whichever uniform layers stream, so the choice is about
//     keeping the copy engine busy and simple: the copies run in compute
//     order through one ring (layer i uses slot (i - r) mod N, fixed, so the
//     step can be captured in a CUDA graph), and slots freed by the last
//     layers of step n are refilled with the first streamed layers of step
//     n+1 while lm_head, sampling, the host's turnaround and the whole
//     resident prefix of step n+1 run. The copy engine gets the longest
//     possible head start before the first streamed layer is needed; with
//     streamed layers spread among resident ones it would get at most one
//     layer's compute at a time and would stall the first step after idle.
//
// Streaming k layers through N ring slots occupies min(k, N) layer-sized
// device buffers, so streaming frees (k - N) layers of memory: it takes
// k > N to save anything. Zero-copy has no ring and saves all k.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "offload/footprint.h"
#include "offload/strategy.h"
#include "ringserve/common/expected.h"

namespace ringserve::offload {

struct PlanRequest {
  uint64_t gpu_budget_bytes = 0;      // --gpu-memory
  uint64_t kv_bytes = 0;              // kv_pool_bytes(max_batch x max_context) or a KV budget
  uint64_t workspace_bytes = 0;       // the engine's figure, or estimate_workspace_bytes()
  uint64_t extra_resident_bytes = 0;  // anything else the caller keeps on the GPU
  Strategy strategy = Strategy::kStream;
  int ring_slots = 2;  // stream: device buffers in the ring, 2 (double) or 3 (triple) buffering
  int max_batch = 1;   // sequences per step, for the embedding rows crossing the link
};

struct Plan {
  Strategy strategy = Strategy::kStream;
  int num_layers = 0;
  int resident_layers = 0;  // layers [0, resident_layers) live on the GPU; the rest stream
  bool lm_head_resident = true;
  bool embedding_resident = true;  // false: the table stays in pinned host memory
  int ring_slots = 0;              // device buffers in the ring; 0 when nothing streams
  uint64_t ring_slot_bytes = 0;
  int max_batch = 1;

  // GPU bytes, by what they hold.
  uint64_t budget_bytes = 0;
  uint64_t layer_bytes = 0;  // one layer (footprint)
  uint64_t resident_layer_bytes = 0;
  uint64_t lm_head_bytes = 0;
  uint64_t embedding_device_bytes = 0;
  uint64_t final_norm_bytes = 0;
  uint64_t kv_bytes = 0;
  uint64_t workspace_bytes = 0;
  uint64_t ring_bytes = 0;
  uint64_t extra_bytes = 0;
  uint64_t gpu_total_bytes = 0;

  uint64_t host_pinned_bytes = 0;          // streamed layers + embedding when on the host
  uint64_t streamed_bytes_per_step = 0;    // layer bytes crossing PCIe per step (any batch)
  uint64_t embedding_bytes_per_token = 0;  // rows crossing per sequence when on the host

  int streamed_layers() const { return num_layers - resident_layers; }
  bool is_streamed(int layer) const { return layer >= resident_layers; }
  // Ring slot of a streamed layer (stream strategy), -1 for a resident one.
  int ring_slot(int layer) const;
  // Bytes crossing the link per decode step at `batch` sequences.
  uint64_t link_bytes_per_step(int batch) const;
  // The link floor of one step: link_bytes_per_step / link_gbps (GB/s = 1e9 B/s).
  double floor_seconds(double link_gbps, int batch = 1) const;

  // One line per fact, for the start-up log and test output, e.g.
  //   plan (stream, budget 8.59 GB): resident: layers 0-17, lm_head; streamed: layers 18-27 ...
  std::vector<std::string> lines() const;
  std::string to_string() const;  // lines() joined with '\n'
  // The floor line for a link bandwidth ("floor at 55.0 GB/s: 42.4 ms/step, 23.6 tok/s at batch
  // 1").
  std::string floor_line(double link_gbps, int batch) const;
};

// Places the model within the budget (policy above). Errors:
// kResourceExhausted when even the minimum does not fit, naming every term;
// kInvalidArgument for a zero budget, a zero KV pool or ring_slots outside 2..4.
Expected<Plan> make_plan(const ModelFootprint& footprint, const PlanRequest& request);

// The smallest budget make_plan accepts for this request's strategy.
uint64_t minimum_budget(const ModelFootprint& footprint, const PlanRequest& request);

// Writes plan.lines() to the "offload" logger at info.
void log_plan(const Plan& plan);

}  // namespace ringserve::offload
