// `cuda_bench --register-probe FILE`: could the loader skip the copy out of
// the page cache? Maps FILE, registers chunks of the mapping with CUDA
// (page-locking the page cache's own pages) and copies them to the device
// straight from there. Reports the rate of each part, to compare with the
// pread copy the loader makes (read_bench --warm 1).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "bench.h"

namespace ringserve::bench {

int run_register_probe(const std::string& path, size_t chunk_mib) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    std::perror(path.c_str());
    return 1;
  }
  struct stat st {};
  ::fstat(fd, &st);
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  check(cudaFree(nullptr), "context");
  const size_t chunk = chunk_mib << 20;
  void* dev = dmalloc(chunk);
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  using Clock = std::chrono::steady_clock;
  auto secs = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  double reg = 0, copy = 0, unreg = 0;
  size_t done = 0;
  const auto t0 = Clock::now();
  for (size_t off = 0; off + chunk <= size; off += chunk) {
    char* p = static_cast<char*>(map) + off;
    const auto a = Clock::now();
    const cudaError_t err = cudaHostRegister(p, chunk, cudaHostRegisterReadOnly);
    const auto b = Clock::now();
    if (err != cudaSuccess) {
      std::printf("cudaHostRegister(read-only, %zu MiB of a file mapping): %s\n", chunk_mib,
                  cudaGetErrorString(err));
      cudaGetLastError();
      break;
    }
    check(cudaMemcpyAsync(dev, p, chunk, cudaMemcpyHostToDevice, s), "copy");
    check(cudaStreamSynchronize(s), "sync");
    const auto c = Clock::now();
    check(cudaHostUnregister(p), "unregister");
    const auto d = Clock::now();
    reg += secs(a, b);
    copy += secs(b, c);
    unreg += secs(c, d);
    done += chunk;
  }
  const double total = secs(t0, Clock::now());
  if (done > 0)
    std::printf(
        "register probe, %s, %zu MiB chunks: %.2f GB; register %.2f GB/s, copy from the "
        "registered page cache %.2f GB/s, unregister %.2f GB/s; all three in sequence %.2f "
        "GB/s\n",
        path.c_str(), chunk_mib, done / 1e9, done / reg / 1e9, done / copy / 1e9,
        done / unreg / 1e9, done / total / 1e9);
  cudaFree(dev);
  cudaStreamDestroy(s);
  ::munmap(map, size);
  return done > 0 ? 0 : 1;
}

}  // namespace ringserve::bench
