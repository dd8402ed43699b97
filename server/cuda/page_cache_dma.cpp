#include "cuda/page_cache_dma.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_check.h"

namespace ringserve::cuda {
namespace {

// The file's mapping, unmapped on every exit.
struct Mapping {
  void* base = MAP_FAILED;
  size_t bytes = 0;
  ~Mapping() {
    if (base != MAP_FAILED) ::munmap(base, bytes);
  }
};

// Which chunks are registered, handed out and unregistered; shared by the
// consumer (the calling thread) and the registering workers.
class Chunks {
 public:
  Chunks(char* base, uint64_t first_page_offset, uint64_t end, size_t chunk, int count)
      : base_(base), first_(first_page_offset), end_(end), chunk_(chunk), state_(count) {}

  int count() const { return static_cast<int>(state_.size()); }
  char* ptr(int k) const { return base_ + static_cast<size_t>(k) * chunk_; }
  // File offsets [begin, end) chunk k covers (whole pages, the last one cut
  // at the mapped end).
  uint64_t begin(int k) const { return first_ + static_cast<uint64_t>(k) * chunk_; }
  uint64_t end(int k) const { return std::min(end_, begin(k) + chunk_); }
  size_t bytes(int k) const { return static_cast<size_t>(end(k) - begin(k)); }

  enum class State { kPending, kRegistered, kFailed, kUnregistered };

  void set(int k, State s) {
    {
      std::lock_guard lock(mu_);
      state_[k] = s;
    }
    cv_.notify_all();
  }
  // Records the first error and stops everyone.
  void fail(cudaError_t err) {
    {
      std::lock_guard lock(mu_);
      if (error_ == cudaSuccess) error_ = err;
      stop_ = true;
    }
    cv_.notify_all();
  }
  // Waits until chunk k is registered (true) or failed / stopped (false).
  bool wait_registered(int k) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return state_[k] != State::kPending || stop_; });
    return state_[k] == State::kRegistered && !stop_;
  }
  void consumed(int k) {
    {
      std::lock_guard lock(mu_);
      consumed_ = k + 1;
    }
    cv_.notify_all();
  }
  // Waits until the consumer has handed out chunk k (false: stopped).
  bool wait_consumed(int k) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return consumed_ > k || stop_; });
    return consumed_ > k;
  }
  int consumed_count() {
    std::lock_guard lock(mu_);
    return consumed_;
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }
  State state(int k) {
    std::lock_guard lock(mu_);
    return state_[k];
  }
  cudaError_t error() {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  char* base_;
  uint64_t first_, end_;
  size_t chunk_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<State> state_;
  int consumed_ = 0;
  bool stop_ = false;
  cudaError_t error_ = cudaSuccess;
};

}  // namespace

Expected<io::ReadStats> read_page_cache_dma(const std::filesystem::path& file, uint64_t offset,
                                            uint64_t length, std::span<const cudaEvent_t> events,
                                            cudaStream_t stream, const io::ChunkHandler& on_chunk,
                                            const PageCacheDmaOptions& options) {
  const int ahead = static_cast<int>(events.size());
  if (options.threads < 1 || ahead < options.threads)
    return make_error(Errc::kInvalidArgument, "page-cache DMA: {} threads, {} chunks ahead",
                      options.threads, ahead);
  io::ReadStats stats;
  if (length == 0) return stats;
  // The workers register for the caller's device (the runtime binds each
  // thread to device 0 until told otherwise).
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int supported = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrHostRegisterReadOnlySupported, device));
  if (!supported)
    return make_error(Errc::kUnsupported, "the device cannot register read-only host memory");

  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(Errc::kIoError, "{}: {}", file.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error(Errc::kIoError, "{}: {}", file.string(), std::strerror(e));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset > size || length > size - offset) {
    ::close(fd);
    return make_error(Errc::kInvalidArgument, "{}: range [{}, +{}) past the end ({} bytes)",
                      file.string(), offset, length, size);
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t first = offset / page * page;
  const uint64_t last = (offset + length + page - 1) / page * page;  // within the mapped file
  Mapping map;
  map.bytes = static_cast<size_t>(last - first);
  map.base = ::mmap(nullptr, map.bytes, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(first));
  const int map_errno = errno;
  ::close(fd);
  if (map.base == MAP_FAILED)
    return make_error(Errc::kIoError, "{}: mmap: {}", file.string(), std::strerror(map_errno));

  const size_t chunk = (std::max<size_t>(options.chunk_bytes, 1) + page - 1) / page * page;
  const int count = static_cast<int>((map.bytes + chunk - 1) / chunk);
  Chunks chunks(static_cast<char*>(map.base), first, last, chunk, count);
  std::atomic<int> next{0};

  // Worker: claim chunk j; before registering it, release chunk j - ahead
  // (same event slot) once its copies are done.
  auto work = [&] {
    if (const cudaError_t err = cudaSetDevice(device); err != cudaSuccess) {
      chunks.fail(err);
      return;
    }
    for (int j = next++; j < count; j = next++) {
      if (j >= ahead) {
        const int old = j - ahead;
        if (!chunks.wait_consumed(old)) return;
        cudaError_t err = cudaEventSynchronize(events[old % ahead]);
        if (err == cudaSuccess) err = cudaHostUnregister(chunks.ptr(old));
        if (err != cudaSuccess) {
          chunks.fail(err);
          return;
        }
        chunks.set(old, Chunks::State::kUnregistered);
      }
      const cudaError_t err =
          cudaHostRegister(chunks.ptr(j), chunks.bytes(j), cudaHostRegisterReadOnly);
      if (err != cudaSuccess) {
        cudaGetLastError();
        chunks.set(j, Chunks::State::kFailed);
        chunks.fail(err);
        return;
      }
      chunks.set(j, Chunks::State::kRegistered);
    }
  };

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < options.threads; ++t) workers.emplace_back(work);

  Status status = ok();
  for (int k = 0; k < count && status; ++k) {
    if (!chunks.wait_registered(k)) break;
    const uint64_t b = std::max(chunks.begin(k), offset);
    const uint64_t e = std::min(chunks.end(k), offset + length);
    io::Chunk c;
    c.offset = b;
    c.bytes = std::span<const std::byte>(
        reinterpret_cast<const std::byte*>(chunks.ptr(k)) + (b - chunks.begin(k)),
        static_cast<size_t>(e - b));
    c.slot = static_cast<size_t>(k % ahead);
    c.index = static_cast<uint64_t>(k);
    status = on_chunk(c);
    if (status) {
      stats.bytes += c.bytes.size();
      ++stats.chunks;
    }
    chunks.consumed(k);
  }
  chunks.stop();
  for (auto& w : workers) w.join();

  // Every registered chunk's copies are done before it is unregistered: the
  // handed-out ones wait for their slot's event (recorded by the handler for
  // them), the others had no copies. After a failure the handler may have
  // enqueued copies without recording the event: drain its stream.
  const int handed_out = chunks.consumed_count();
  if (!status || chunks.error() != cudaSuccess) cudaStreamSynchronize(stream);
  for (int k = 0; k < count; ++k) {
    if (chunks.state(k) != Chunks::State::kRegistered) continue;
    if (k < handed_out) cudaEventSynchronize(events[k % ahead]);
    cudaHostUnregister(chunks.ptr(k));
  }
  RS_TRY_STATUS(std::move(status));
  if (const cudaError_t err = chunks.error(); err != cudaSuccess) {
    if (handed_out == 0)
      return make_error(Errc::kUnsupported, "{}: registering the page cache: {}", file.string(),
                        cudaGetErrorString(err));
    return make_error(Errc::kInternal, "{}: registering the page cache: {}", file.string(),
                      cudaGetErrorString(err));
  }
  if (stats.bytes != length)
    return make_error(Errc::kInternal, "{}: {} of {} bytes handed out", file.string(), stats.bytes,
                      length);
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.method = io::Method::kPreadBuffered;
  return stats;
}

}  // namespace ringserve::cuda
