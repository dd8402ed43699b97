// The CUDA benchmark, all in one run: device memory ceilings first, then the
// hot kernels at the 7B's shapes, then the engine (prefill and decode) on
// synthetic:deepseek-r1-distill-qwen-7b. Results are printed as tables.
// Two separate modes for small-VRAM mode (issue 7): --offload (decode under
// GPU memory budgets against the host-to-device link) and --load DIR
// (checkpoint load rate).
#include <CLI/CLI.hpp>

#include <cstdint>

#include "bandwidth.h"
#include "bench.h"

namespace ringserve::bench {

Ceilings measure_ceilings() {
  const size_t bytes = size_t{4} << 30;
  void *src = nullptr, *dst = nullptr;
  uint32_t* sink = nullptr;
  check(cudaMalloc(&src, bytes), "malloc");
  check(cudaMalloc(&dst, bytes), "malloc");
  check(cudaMalloc(reinterpret_cast<void**>(&sink), 4), "malloc");
  check(cudaMemset(src, 0x5a, bytes), "memset");  // not zeros: see METHOD.md
  Ceilings c;
  const double memcpy_ms = median_ms(
      [&] { check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice), "copy"); }, 10);
  const double copy_ms =
      median_ms([&] { check(launch_copy(src, dst, bytes, nullptr), "copy"); }, 10);
  const double read_ms =
      median_ms([&] { check(launch_read(src, bytes, sink, nullptr), "read"); }, 10);
  const double memcpy_gbs = 2.0 * bytes / memcpy_ms / 1e6;
  c.copy_gbs = std::max(memcpy_gbs, 2.0 * bytes / copy_ms / 1e6);
  c.read_gbs = bytes / read_ms / 1e6;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "props");
  std::printf("== device: %s, %d SMs, L2 %.0f MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize / 1e6);
  std::printf("== ceilings (4 GiB buffers, median of 10)\n");
  std::printf("  cudaMemcpy D2D      %8.0f GB/s (read + write)\n", memcpy_gbs);
  std::printf("  copy kernel         %8.0f GB/s (read + write)\n", 2.0 * bytes / copy_ms / 1e6);
  std::printf("  read-only kernel    %8.0f GB/s\n", c.read_gbs);
  std::printf("  => copy ceiling %.0f GB/s, read ceiling %.0f GB/s\n", c.copy_gbs, c.read_gbs);
  cudaFree(src);
  cudaFree(dst);
  cudaFree(sink);
  return c;
}

}  // namespace ringserve::bench

int main(int argc, char** argv) {
  CLI::App app{"ringserve CUDA benchmark"};
  bool skip_kernels = false, skip_engine = false, quick = false;
  int decode_steps = 256;
  int profile_batch = 0;
  app.add_flag("--skip-kernels", skip_kernels, "skip the per-kernel benchmark");
  app.add_flag("--skip-engine", skip_engine, "skip the engine benchmark");
  app.add_flag("--quick", quick, "fewer kernel configurations");
  bool graph_only = false;
  app.add_flag("--in-graph", graph_only,
               "only the ceilings and the decode kernels timed inside CUDA graphs");
  bool attention_only = false;
  app.add_flag("--attention", attention_only,
               "only the decode attention kernels timed inside CUDA graphs, contexts 512 to 16384");
  app.add_option("--decode-steps", decode_steps,
                 "decode steps per measurement (context 512 -> 512+N)");
  app.add_option("--profile-decode", profile_batch,
                 "only run two un-graphed decode steps at this batch size inside "
                 "cudaProfilerStart/Stop (for ncu --profile-from-start off)");
  bool offload = false;
  ringserve::bench::OffloadBenchOptions off;
  app.add_flag("--offload", offload,
               "only the small-VRAM benchmark: pinned/pageable H2D rate, then decode tok/s "
               "under each --budgets x --strategies against the link floor");
  app.add_option("--budgets", off.budgets, "--offload: GPU memory budgets")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--strategies", off.strategies, "--offload: stream, zerocopy and/or auto")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--ring-slots", off.ring_slots,
                 "--offload: ring sizes to measure for stream (2 and/or 3)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--batches", off.batches, "--offload: batch sizes")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--offload-steps", off.steps, "--offload: timed decode steps per batch size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("!--no-resident", off.resident_row, "--offload: skip the fully resident rows");
  ringserve::bench::LoadBenchOptions load;
  app.add_option("--load", load.dir,
                 "only time load_cuda_engine on this checkpoint directory (e.g. one written by "
                 "`ringserve convert --format hf-bf16`)");
  app.add_option("--load-repeats", load.repeats, "--load: loads in this process")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--gpu-memory", load.gpu_memory, "--load: GPU memory budget (default: none)");
  std::string register_probe;
  size_t probe_chunk_mib = 256;
  app.add_option("--register-probe", register_probe,
                 "only time registering a mapped file's page cache with CUDA and copying from it");
  app.add_option("--probe-chunk-mib", probe_chunk_mib, "--register-probe: chunk size")
      ->capture_default_str();
  app.add_flag("--slot-sweep", load.slot_sweep,
               "--load: also time 8, 2 and 32 MiB reader slots (default 4 MiB)");
  CLI11_PARSE(app, argc, argv);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  if (!register_probe.empty())
    return ringserve::bench::run_register_probe(register_probe, probe_chunk_mib);
  if (!load.dir.empty()) return ringserve::bench::run_load_bench(load);
  if (offload) return ringserve::bench::run_offload_bench(off);
  if (profile_batch > 0) {
    ringserve::bench::run_decode_profile(profile_batch);
    return 0;
  }
  if (attention_only) {
    ringserve::bench::run_attention_graph_bench();
    return 0;
  }
  const auto ceilings = ringserve::bench::measure_ceilings();
  if (graph_only) {
    ringserve::bench::run_graph_bench(ceilings);
    return 0;
  }
  if (!skip_kernels) {
    ringserve::bench::run_kernel_bench(ceilings, quick);
    ringserve::bench::run_graph_bench(ceilings);
  }
  if (!skip_engine) ringserve::bench::run_engine_bench(ceilings, decode_steps);
  return 0;
}
