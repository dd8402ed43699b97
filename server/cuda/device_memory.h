// Owning handles for device and pinned host memory, and for the CUDA events
// that order streams. Every buffer the engine uses is one of these, created
// at start-up and freed at shutdown.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Expected<DeviceBuffer> allocate(size_t bytes, const char* what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Host memory of either kind the pipeline levels need (engine::Pipeline):
// pinned and mapped into the device address space (kernels may read and
// write it; copies from it run asynchronously at full link rate), or plain
// pageable memory (what a naive port uses: every copy from it is staged by
// the driver and synchronous).
// kPinnedRegistered: pinned but not mapped, for staging only the copy engine
// reads: anonymous memory on transparent huge pages, page-locked with
// cudaHostRegister (on a VM, locking 2 MiB pages costs far less than
// cudaHostAlloc's 4 KiB ones).
enum class HostMemory { kPinnedMapped, kPageable, kPinnedRegistered };

class HostBuffer {
 public:
  HostBuffer() = default;
  static Expected<HostBuffer> allocate(size_t bytes, HostMemory kind, const char* what);
  // Pinned and mapped: page-locked so copies run at link rate, mapped so
  // kernels can read and write it (sampled results land there).
  static Expected<HostBuffer> allocate(size_t bytes, const char* what) {
    return allocate(bytes, HostMemory::kPinnedMapped, what);
  }
  ~HostBuffer();
  HostBuffer(HostBuffer&& o) noexcept { swap(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  template <class T = void>
  T* host() const {
    return static_cast<T*>(host_);
  }
  // The device address of pinned, mapped memory; null for the other kinds.
  template <class T = void>
  T* device() const {
    return static_cast<T*>(device_);
  }
  size_t bytes() const { return bytes_; }
  bool pinned() const { return kind_ != HostMemory::kPageable; }

 private:
  void swap(HostBuffer& o) noexcept {
    std::swap(host_, o.host_);
    std::swap(device_, o.device_);
    std::swap(bytes_, o.bytes_);
    std::swap(kind_, o.kind_);
  }
  void* host_ = nullptr;
  void* device_ = nullptr;
  size_t bytes_ = 0;
  HostMemory kind_ = HostMemory::kPinnedMapped;
};

using PinnedBuffer = HostBuffer;

// `count` events with timing disabled (they only order streams and tell the
// host when work is done), destroyed together.
class Events {
 public:
  Events() = default;
  static Expected<Events> create(size_t count);
  ~Events() { destroy(); }
  Events(Events&& o) noexcept : events_(std::exchange(o.events_, {})) {}
  Events& operator=(Events&& o) noexcept {
    if (this != &o) {
      destroy();
      events_ = std::exchange(o.events_, {});
    }
    return *this;
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;

  cudaEvent_t operator[](size_t i) const { return events_[i]; }
  size_t size() const { return events_.size(); }

 private:
  void destroy();
  std::vector<cudaEvent_t> events_;
};

// Carves aligned sub-buffers out of one allocation (the workspaces).
class Arena {
 public:
  explicit Arena(size_t alignment = 256) : alignment_(alignment) {}
  // Records a request; returns its offset. Call base() after allocate().
  size_t reserve(size_t bytes) {
    const size_t off = (size_ + alignment_ - 1) / alignment_ * alignment_;
    size_ = off + bytes;
    return off;
  }
  size_t size() const { return size_; }

 private:
  size_t alignment_;
  size_t size_ = 0;
};

}  // namespace ringserve::cuda
