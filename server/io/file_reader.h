// Reads file ranges at link speed into caller-provided page-aligned buffers
// (pinned, in practice): O_DIRECT through io_uring with one read in flight
// per buffer, falling back to the page cache and to pread threads where the
// filesystem or kernel refuses (each fallback logged on the "io" logger).
//
// The pipelined read hands out the range chunk by chunk, in file order, so
// the caller can start a host-to-device copy (and GPU-side quantization) of
// chunk i while chunks i+1.. are still being read:
//
//   reader.read(offset, length, slots,
//       [&](const io::Chunk& c) {          // copy c.bytes, record event[c.slot]
//         return upload(c.offset, c.bytes, stream, event[c.slot]); },
//       [&](size_t slot) {                 // before the reader refills a slot
//         return sync(event[slot]); });
//
// Under O_DIRECT every read covers whole 4096-byte blocks: the reader reads
// the aligned superset of the range and hands out exactly the bytes asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>

#include "io/method.h"
#include "ringserve/common/expected.h"

namespace ringserve::io {

struct ReaderOptions {
  // kAuto: io_uring for O_DIRECT reads, pread threads for the page cache (or
  // when io_uring is unavailable). kIoUring / kPread force one.
  Backend backend = Backend::kAuto;
  // kAuto: O_DIRECT unless half the file or more is in the page cache (then
  // memory is faster than the device) or the filesystem refuses it.
  // kOn fails where O_DIRECT cannot work; kOff never tries.
  DirectIo direct = DirectIo::kAuto;
  // Threads of the pread path; 0: half the cores, 2 to 8 (copies from the
  // page cache scale with threads).
  int pread_threads = 0;
};

struct Chunk {
  uint64_t offset = 0;               // file offset of bytes[0]
  std::span<const std::byte> bytes;  // the requested bytes this chunk covers, inside the slot
  size_t slot = 0;                   // which caller buffer holds them
  uint64_t index = 0;                // 0, 1, ... in file order
};

// Called once per chunk, in file order, on the thread that called read().
// The slot is not refilled before this returns and `before_reuse` (if any)
// says the slot is free; an error stops the read and is returned by it.
using ChunkHandler = std::function<Status(const Chunk&)>;
using SlotReclaim = std::function<Status(size_t slot)>;

struct ReadStats {
  Method method = Method::kPreadBuffered;  // the path the read ended on
  uint64_t bytes = 0;                      // requested bytes handed out
  uint64_t chunks = 0;
  double seconds = 0.0;
  double gb_per_s() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
};

class FileReader {
 public:
  // Errors: kNotFound, kPermissionDenied, kInvalidArgument (a directory, not
  // a regular file), kUnsupported (a forced backend or O_DIRECT unavailable),
  // kIoError.
  static Expected<FileReader> open(const std::filesystem::path& path,
                                   const ReaderOptions& options = {});

  FileReader();
  ~FileReader();
  FileReader(FileReader&&) noexcept;
  FileReader& operator=(FileReader&&) noexcept;

  const std::filesystem::path& path() const;
  uint64_t size() const;  // at open
  Method method() const;  // the path the next read takes

  // Reads [offset, offset + length) through `slots`: every slot the same
  // size, a multiple of 4096 bytes (at most 1 GiB), at a 4096-aligned
  // address; one read is in flight per slot. An empty range calls nothing.
  // Errors: kInvalidArgument (bad slots, range past the end of the file),
  // kCorruptData (the file ended early: truncated while being read),
  // kIoError (with errno text and offset), or the handler's own error.
  // Every read is finished before read() returns, success or not.
  Expected<ReadStats> read(uint64_t offset, uint64_t length,
                           std::span<const std::span<std::byte>> slots,
                           const ChunkHandler& on_chunk, const SlotReclaim& before_reuse = {});

  // Convenience: reads [offset, offset + dest.size()) into any `dest` through
  // `depth` internal aligned buffers of `chunk_bytes` (one extra memcpy).
  Expected<ReadStats> read_into(uint64_t offset, std::span<std::byte> dest,
                                size_t chunk_bytes = size_t{4} << 20, int depth = 4);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace ringserve::io
