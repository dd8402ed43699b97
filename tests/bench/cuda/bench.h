// Shared pieces of the GPU benchmark: timing helpers and the measured
// ceilings every result is reported against.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace ringserve::bench {

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

inline void* dmalloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

// Random bytes (never zeros: see METHOD.md) so timings are those of real
// data; the patterns are finite as bf16 and fp32.
inline void fill_random(void* p, size_t bytes, uint64_t seed) {
  std::vector<uint32_t> host((bytes + 3) / 4);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (auto& v : host) v = rng() & 0x3f7f3f7fu;
  check(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice), "fill");
}

// Median milliseconds of `iters` runs of fn (each run timed with events
// after `warmup` untimed runs).
inline double median_ms(const std::function<void()>& fn, int iters, int warmup = 3) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<float> t(iters);
  for (int i = 0; i < iters; ++i) {
    check(cudaEventRecord(a), "record");
    fn();
    check(cudaEventRecord(b), "record");
    check(cudaEventSynchronize(b), "sync");
    check(cudaEventElapsedTime(&t[i], a, b), "elapsed");
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Milliseconds per call of fn(stream) inside a CUDA graph: `reps` calls
// captured back to back into one graph, the graph replayed `replays` times
// between two events (median of 5 such timings). This is what a kernel costs
// in the engine's decode graph: no launch latency, no events around it.
inline double graph_ms(const std::function<void(cudaStream_t)>& fn, int reps, int replays = 5) {
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cudaGraph_t graph;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
  for (int i = 0; i < reps; ++i) fn(s);
  check(cudaStreamEndCapture(s, &graph), "end capture");
  cudaGraphExec_t exec;
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  check(cudaGraphLaunch(exec, s), "launch");  // warm-up (and upload)
  std::vector<float> t(5);
  for (auto& ms : t) {
    check(cudaEventRecord(a, s), "record");
    for (int r = 0; r < replays; ++r) check(cudaGraphLaunch(exec, s), "launch");
    check(cudaEventRecord(b, s), "record");
    check(cudaEventSynchronize(b), "sync");
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] / replays / reps;
}

struct Ceilings {
  double copy_gbs = 0;  // bytes read + written per second, device to device
  double read_gbs = 0;  // read-only
};

Ceilings measure_ceilings();
void run_kernel_bench(const Ceilings& c, bool quick);
void run_graph_bench(const Ceilings& c);
// Only the decode attention part of run_graph_bench.
void run_attention_graph_bench();
void run_engine_bench(const Ceilings& c, int decode_steps);
void run_decode_profile(int batch);

// Small-VRAM mode (offload_bench.cpp, `cuda_bench --offload`).
struct LinkRates {
  double pinned_gbs = 0;    // host-to-device from cudaHostAlloc memory
  double pageable_gbs = 0;  // host-to-device from ordinary (pageable) memory
};
LinkRates measure_h2d();

struct OffloadBenchOptions {
  std::string model = "synthetic:deepseek-r1-distill-qwen-7b";
  std::vector<std::string> budgets = {"8GiB", "12GiB"};  // --gpu-memory values
  std::vector<std::string> strategies = {"stream", "zerocopy"};
  std::vector<int> ring_slots = {2};  // stream rows, one per ring size
  std::vector<int> batches = {1, 2, 4, 8};
  int steps = 64;            // timed decode steps per batch size
  bool resident_row = true;  // the same batches fully resident, for reference
};
int run_offload_bench(const OffloadBenchOptions& options);

// `cuda_bench --load DIR`: load_cuda_engine's read + upload + quantize rate.
struct LoadBenchOptions {
  std::string dir;
  int repeats = 1;
  std::string gpu_memory;   // "" = no budget
  bool slot_sweep = false;  // also 8, 2 and 32 MiB reader slots
};
int run_load_bench(const LoadBenchOptions& options);

// `cuda_bench --register-probe FILE`: register_probe.cpp.
int run_register_probe(const std::string& path, size_t chunk_mib);

}  // namespace ringserve::bench
