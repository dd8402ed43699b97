// Shared pieces of the GPU benchmark: timing helpers and the measured
// ceilings every result is reported against.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace ringserve::bench {

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
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

struct Ceilings {
  double copy_gbs = 0;  // bytes read + written per second, device to device
  double read_gbs = 0;  // read-only
};

Ceilings measure_ceilings();
void run_kernel_bench(const Ceilings& c, bool quick);
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
  std::string gpu_memory;  // "" = no budget
};
int run_load_bench(const LoadBenchOptions& options);

}  // namespace ringserve::bench
