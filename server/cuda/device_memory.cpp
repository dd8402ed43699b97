#include "cuda/device_memory.h"

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

Expected<PinnedBuffer> PinnedBuffer::allocate(size_t bytes, const char* what) {
  PinnedBuffer b;
  if (bytes == 0) return b;
  if (const cudaError_t err = cudaHostAlloc(&b.host_, bytes, cudaHostAllocMapped);
      err != cudaSuccess) {
    cudaGetLastError();
    return make_error(Errc::kResourceExhausted, "allocating pinned {} ({:.1f} MiB): {}", what,
                      bytes / 1048576.0, cudaGetErrorString(err));
  }
  b.bytes_ = bytes;
  CUDA_CHECK(cudaHostGetDevicePointer(&b.device_, b.host_, 0));
  return b;
}

PinnedBuffer::~PinnedBuffer() {
  if (host_) cudaFreeHost(host_);
}

}  // namespace ringserve::cuda
