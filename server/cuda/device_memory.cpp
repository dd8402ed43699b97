#include "cuda/device_memory.h"

#include <cstdlib>

#include "cuda_check.h"

namespace ringserve::cuda {

Expected<DeviceBuffer> DeviceBuffer::allocate(size_t bytes, const char* what) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  if (const cudaError_t err = cudaMalloc(&b.ptr_, bytes); err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of a failed malloc
    return make_error(Errc::kResourceExhausted, "allocating {} ({:.1f} MiB) on the GPU: {}", what,
                      bytes / 1048576.0, cudaGetErrorString(err));
  }
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

Expected<HostBuffer> HostBuffer::allocate(size_t bytes, HostMemory kind, const char* what) {
  HostBuffer b;
  b.kind_ = kind;
  if (bytes == 0) return b;
  if (kind == HostMemory::kPageable) {
    // Page-aligned like the pinned kind, so the two differ only in pinning.
    b.host_ = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!b.host_)
      return make_error(Errc::kResourceExhausted, "allocating {} ({:.1f} MiB) in host memory", what,
                        bytes / 1048576.0);
    b.bytes_ = bytes;
    return b;
  }
  if (const cudaError_t err = cudaHostAlloc(&b.host_, bytes, cudaHostAllocMapped);
      err != cudaSuccess) {
    cudaGetLastError();
    b.host_ = nullptr;
    return make_error(Errc::kResourceExhausted, "allocating pinned {} ({:.1f} MiB): {}", what,
                      bytes / 1048576.0, cudaGetErrorString(err));
  }
  b.bytes_ = bytes;
  CUDA_CHECK(cudaHostGetDevicePointer(&b.device_, b.host_, 0));
  return b;
}

HostBuffer::~HostBuffer() {
  if (!host_) return;
  if (kind_ == HostMemory::kPageable) {
    std::free(host_);
  } else {
    cudaFreeHost(host_);
  }
}

Expected<Events> Events::create(size_t count) {
  Events e;
  e.events_.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    cudaEvent_t ev = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    e.events_.push_back(ev);
  }
  return e;
}

void Events::destroy() {
  for (cudaEvent_t ev : events_) cudaEventDestroy(ev);
  events_.clear();
}

}  // namespace ringserve::cuda
