#include "cuda/device_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <system_error>
#include <thread>
#include <vector>

#include "cuda_check.h"

namespace ringserve::cuda {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Whole huge pages, so the mapping's last page can be a huge one too.
size_t registered_length(size_t bytes) {
  return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

// cudaHostRegister faults the pages in itself, on one thread, and zeroing
// the memory is most of its cost (measured on the H200 VM for 96 MiB:
// 17-20 ms to register untouched memory, 2-3 ms once faulted in). Touching
// one byte of every 4 KiB page from several threads first divides that.
void fault_in_parallel(std::byte* p, size_t len) {
  constexpr size_t kPage = 4096, kPerThread = size_t{8} << 20;
  const size_t threads =
      std::clamp<size_t>(len / kPerThread, 1, std::max(1u, std::thread::hardware_concurrency()));
  const auto touch = [p, len, threads](size_t t) {
    // Ranges of whole huge pages, so no huge page is faulted by two threads.
    const size_t per = (len / kHugePage + threads - 1) / threads * kHugePage;
    const size_t end = std::min(len, (t + 1) * per);
    for (size_t o = t * per; o < end; o += kPage)
      *reinterpret_cast<volatile std::byte*>(p + o) = {};
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(touch, t);
    } catch (const std::system_error&) {  // no thread to be had: do its share here
      touch(t);
    }
  }
  touch(0);
  for (auto& th : pool) th.join();
}

}  // namespace

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
  if (kind == HostMemory::kPinnedRegistered) {
    const size_t len = registered_length(bytes);
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return make_error(Errc::kResourceExhausted, "allocating {} ({:.1f} MiB) in host memory", what,
                        bytes / 1048576.0);
    madvise(p, len, MADV_HUGEPAGE);  // a hint: without huge pages it still works, slower
    fault_in_parallel(static_cast<std::byte*>(p), len);
    if (const cudaError_t err = cudaHostRegister(p, len, cudaHostRegisterDefault);
        err != cudaSuccess) {
      cudaGetLastError();
      munmap(p, len);
      return make_error(Errc::kResourceExhausted, "page-locking {} ({:.1f} MiB): {}", what,
                        bytes / 1048576.0, cudaGetErrorString(err));
    }
    b.host_ = p;
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
  } else if (kind_ == HostMemory::kPinnedRegistered) {
    cudaHostUnregister(host_);
    munmap(host_, registered_length(bytes_));
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
