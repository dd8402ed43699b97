// CUDA runtime only (no kernels): cudaMemcpyAsync on one stream, timed with
// events, so the numbers are what a copy engine delivers over the link.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "preflight/bandwidth_probe.h"

namespace ringserve::preflight {
namespace {

Error cuda_error(const char* what, cudaError_t rc) {
  return make_error(Errc::kUnavailable, "{}: {}", what, cudaGetErrorString(rc));
}

#define PROBE_CHECK(call)                                  \
  do {                                                     \
    cudaError_t rc_ = (call);                              \
    if (rc_ != cudaSuccess) return cuda_error(#call, rc_); \
  } while (0)

struct Resources {
  void* device = nullptr;
  void* pinned = nullptr;
  std::unique_ptr<char[]> pageable;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Resources() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
    if (pinned) cudaFreeHost(pinned);
    if (device) cudaFree(device);
  }
};

// GB/s of `iterations` copies of `bytes`, after one untimed warm-up copy.
Expected<double> time_copies(Resources& r, void* dst, const void* src, size_t bytes,
                             cudaMemcpyKind kind, int iterations,
                             const std::function<void()>* during) {
  PROBE_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, r.stream));
  PROBE_CHECK(cudaStreamSynchronize(r.stream));
  PROBE_CHECK(cudaEventRecord(r.start, r.stream));
  for (int i = 0; i < iterations; ++i) {
    PROBE_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, r.stream));
  }
  PROBE_CHECK(cudaEventRecord(r.stop, r.stream));
  if (during && *during) (*during)();
  PROBE_CHECK(cudaEventSynchronize(r.stop));
  float ms = 0;
  PROBE_CHECK(cudaEventElapsedTime(&ms, r.start, r.stop));
  if (ms <= 0) return make_error(Errc::kInternal, "copy timed at {} ms", ms);
  return static_cast<double>(bytes) * iterations / (ms * 1e-3) / 1e9;
}

}  // namespace

bool bandwidth_probe_built() {
  return true;
}

Expected<BandwidthResult> run_bandwidth_probe(const ProbeOptions& options) {
  const size_t bytes = std::clamp<size_t>(options.bytes, size_t{1} << 20, size_t{1} << 30);
  const int iterations = std::clamp(options.iterations, 1, 32);
  int device = -1;
  if (cudaDeviceGetByPCIBusId(&device, options.bdf.c_str()) != cudaSuccess) {
    cudaGetLastError();
    return make_error(Errc::kUnavailable, "CUDA has no device at {}", options.bdf);
  }
  PROBE_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, device));

  Resources r;
  PROBE_CHECK(cudaMalloc(&r.device, bytes));
  PROBE_CHECK(cudaHostAlloc(&r.pinned, bytes, cudaHostAllocDefault));
  r.pageable.reset(new (std::nothrow) char[bytes]);
  if (!r.pageable)
    return make_error(Errc::kResourceExhausted, "no host memory for {} bytes", bytes);
  std::memset(r.pinned, 1, bytes);
  std::memset(r.pageable.get(), 1, bytes);
  PROBE_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  PROBE_CHECK(cudaEventCreate(&r.start));
  PROBE_CHECK(cudaEventCreate(&r.stop));

  BandwidthResult out;
  out.device_name = prop.name;
  out.bytes = bytes;
  out.iterations = iterations;
  const auto* during = &options.during_load;
  out.pinned_h2d_gbps =
      RS_TRY(time_copies(r, r.device, r.pinned, bytes, cudaMemcpyHostToDevice, iterations, during));
  out.pinned_d2h_gbps = RS_TRY(
      time_copies(r, r.pinned, r.device, bytes, cudaMemcpyDeviceToHost, iterations, nullptr));
  out.pageable_h2d_gbps = RS_TRY(time_copies(r, r.device, r.pageable.get(), bytes,
                                             cudaMemcpyHostToDevice, iterations, nullptr));
  out.pageable_d2h_gbps = RS_TRY(time_copies(r, r.pageable.get(), r.device, bytes,
                                             cudaMemcpyDeviceToHost, iterations, nullptr));
  return out;
}

}  // namespace ringserve::preflight
