#include "io/file_reader.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "io/aligned_buffer.h"
#include "io/open_file.h"
#include "io/read_backend.h"
#include "util/log.h"

namespace ringserve::io {
namespace {

constexpr unsigned kUringDepth = 64;
constexpr size_t kMaxSlotBytes = size_t{1} << 30;
// Auto mode reads through the page cache when at least this much is there.
constexpr double kCachedEnough = 0.5;

uint64_t align_down(uint64_t v) {
  return v / kDirectAlignment * kDirectAlignment;
}
uint64_t align_up(uint64_t v) {
  return align_down(v + kDirectAlignment - 1);
}

int pread_threads(const ReaderOptions& o) {
  if (o.pread_threads > 0) return std::min(o.pread_threads, 16);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 2, 2, 8);
}

Status check_slots(std::span<const std::span<std::byte>> slots) {
  if (slots.empty()) return make_error(Errc::kInvalidArgument, "read: no buffers given");
  const size_t size = slots[0].size();
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto& s = slots[i];
    if (s.size() != size)
      return make_error(Errc::kInvalidArgument, "read: buffer {} is {} bytes, buffer 0 is {}", i,
                        s.size(), size);
    if (size == 0 || size % kDirectAlignment != 0 || size > kMaxSlotBytes)
      return make_error(Errc::kInvalidArgument,
                        "read: buffers must be a non-zero multiple of {} bytes up to 1 GiB, not {}",
                        kDirectAlignment, size);
    if (reinterpret_cast<uintptr_t>(s.data()) % kDirectAlignment != 0)
      return make_error(Errc::kInvalidArgument, "read: buffer {} is not {}-byte aligned", i,
                        kDirectAlignment);
  }
  return ok();
}

}  // namespace

struct FileReader::State {
  std::filesystem::path path;
  ReaderOptions options;
  OpenedFile file;
  Fd buffered;  // opened on the first EINVAL from an O_DIRECT read
  std::unique_ptr<ReadBackend> backend;
  bool io_uring = false;

  bool direct() const { return file.direct && !buffered.valid(); }
  int fd() const { return buffered.valid() ? buffered.get() : file.fd.get(); }
};

FileReader::FileReader() = default;
FileReader::~FileReader() = default;
FileReader::FileReader(FileReader&&) noexcept = default;
FileReader& FileReader::operator=(FileReader&&) noexcept = default;

const std::filesystem::path& FileReader::path() const {
  return s_->path;
}
uint64_t FileReader::size() const {
  return s_->file.size;
}
Method FileReader::method() const {
  return make_method(s_->io_uring, s_->direct());
}

Expected<FileReader> FileReader::open(const std::filesystem::path& path,
                                      const ReaderOptions& options) {
  auto logger = log::get("io");
  auto s = std::make_unique<State>();
  s->path = path;
  s->options = options;
  s->file = RS_TRY(open_for_read(path, options.direct != DirectIo::kOff));
  if (!s->file.direct_refused.empty()) {
    if (options.direct == DirectIo::kOn)
      return make_error(Errc::kUnsupported, "{}: O_DIRECT unavailable: {}", path.string(),
                        s->file.direct_refused);
    logger->info("{}: O_DIRECT unavailable ({}); reading through the page cache", path.string(),
                 s->file.direct_refused);
  }

  if (s->file.direct && options.direct == DirectIo::kAuto) {
    // O_DIRECT skips the page cache: for a file already there (a model
    // loaded before, or just written) it would read the device instead of
    // memory, several times slower.
    const double cached = page_cache_fraction(s->file.fd.get(), s->file.size);
    if (cached >= kCachedEnough) {
      s->file.fd = RS_TRY(reopen_buffered(path));
      s->file.direct = false;
      logger->info("{}: {:.0f}% in the page cache; reading it buffered", path.string(),
                   cached * 100);
    }
  }

  // io_uring's gain is many device reads in flight without threads; a read
  // from the page cache is a memcpy, which only more threads make faster.
  // So auto takes io_uring for O_DIRECT and pread threads for the cache.
  const bool try_uring =
      options.backend == Backend::kIoUring || (options.backend == Backend::kAuto && s->file.direct);
  if (try_uring) {
    auto uring = make_uring_backend(kUringDepth);
    if (uring) {
      s->backend = std::move(*uring);
      s->io_uring = true;
    } else if (options.backend == Backend::kIoUring) {
      return with_context(uring.error(), path.string());
    } else {
      logger->info("{}: io_uring unavailable ({}); reading with {} pread thread(s)", path.string(),
                   uring.error().message, pread_threads(options));
    }
  }
  if (!s->backend) s->backend = make_pread_backend(pread_threads(options));

  FileReader reader;
  reader.s_ = std::move(s);
  logger->debug("{}: {} bytes, reading with {}", path.string(), reader.size(),
                method_name(reader.method()));
  return reader;
}

Expected<ReadStats> FileReader::read(uint64_t offset, uint64_t length,
                                     std::span<const std::span<std::byte>> slots,
                                     const ChunkHandler& on_chunk,
                                     const SlotReclaim& before_reuse) {
  const uint64_t size = s_->file.size;
  const std::string name = s_->path.string();
  if (offset > size || length > size - offset)
    return make_error(Errc::kInvalidArgument,
                      "{}: range [{}, {}+{}) ends past the end of the file ({} bytes)", name,
                      offset, offset, length, size);
  ReadStats stats;
  stats.method = method();
  if (length == 0) return stats;
  RS_TRY_STATUS(check_slots(slots));

  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t end = offset + length;
  const uint64_t first = align_down(offset);
  const uint64_t last = align_up(end);
  const uint64_t slot_bytes = slots[0].size();
  const uint64_t chunks = (last - first + slot_bytes - 1) / slot_bytes;

  std::vector<int32_t> slot_of(chunks, -1);
  std::vector<int> fd_used(chunks, -1);
  std::vector<int64_t> result(chunks, -1);  // bytes read once complete
  std::deque<size_t> free_slots;
  const size_t usable = std::min(slots.size(), s_->backend->max_in_flight());
  for (size_t i = 0; i < usable; ++i) free_slots.push_back(i);
  std::vector<bool> slot_used(slots.size(), false);
  uint64_t submitted = 0, delivered = 0;
  size_t in_flight = 0;

  auto request_for = [&](uint64_t chunk) {
    const uint64_t start = first + chunk * slot_bytes;
    return ReadRequest{chunk, s_->fd(), start,
                       static_cast<size_t>(std::min(slot_bytes, last - start)),
                       slots[static_cast<size_t>(slot_of[chunk])].data()};
  };
  // Buffers belong to the caller: no read may still be writing into one
  // when read() returns, whatever the outcome.
  auto fail = [&](Error e) -> Error {
    while (in_flight > 0) {
      if (!s_->backend->wait()) break;
      --in_flight;
    }
    return e;
  };

  while (delivered < chunks) {
    while (!free_slots.empty() && submitted < chunks) {
      const size_t slot = free_slots.front();
      if (slot_used[slot] && before_reuse) {
        Status st = before_reuse(slot);
        if (!st) return fail(std::move(st).error());
      }
      free_slots.pop_front();
      slot_of[submitted] = static_cast<int32_t>(slot);
      fd_used[submitted] = s_->fd();
      Status st = s_->backend->submit(request_for(submitted));
      if (!st) return fail(std::move(st).error());
      ++in_flight;
      ++submitted;
    }

    auto done = s_->backend->wait();
    if (!done) return fail(std::move(done).error());
    --in_flight;
    const uint64_t chunk = done->tag;
    const uint64_t start = first + chunk * slot_bytes;
    if (done->result == -EINVAL && s_->direct() && s_->options.direct == DirectIo::kAuto) {
      // The filesystem took O_DIRECT at open but refuses the read (alignment
      // it did not advertise): finish through the page cache.
      auto fd = reopen_buffered(s_->path);
      if (!fd) return fail(std::move(fd).error());
      s_->buffered = std::move(*fd);
      log::get("io")->info("{}: O_DIRECT read refused (EINVAL); reading through the page cache",
                           name);
    }
    if (done->result == -EINVAL && s_->buffered.valid() && fd_used[chunk] != s_->buffered.get()) {
      // This O_DIRECT read, or one already in flight when we switched.
      Status st = s_->backend->submit(request_for(chunk));
      if (!st) return fail(std::move(st).error());
      fd_used[chunk] = s_->buffered.get();
      ++in_flight;
      continue;
    }
    if (done->result < 0)
      return fail(
          make_error(Errc::kIoError, "{}: read of {} bytes at offset {}{}: {}", name,
                     request_for(chunk).length, start,
                     fd_used[chunk] == s_->file.fd.get() && s_->file.direct ? " (O_DIRECT)" : "",
                     std::strerror(static_cast<int>(-done->result))));
    const uint64_t needed = std::min(start + slot_bytes, end) - start;
    if (static_cast<uint64_t>(done->result) < needed)
      return fail(make_error(Errc::kCorruptData,
                             "{}: file ended at {} while reading up to {}: truncated while "
                             "being read?",
                             name, start + done->result, end));
    result[chunk] = done->result;

    while (delivered < chunks && result[delivered] >= 0) {
      const uint64_t cstart = first + delivered * slot_bytes;
      const uint64_t from = std::max(cstart, offset);
      const uint64_t to = std::min(cstart + slot_bytes, end);
      const size_t slot = static_cast<size_t>(slot_of[delivered]);
      Chunk c;
      c.offset = from;
      c.bytes = std::span<const std::byte>(slots[slot].data() + (from - cstart), to - from);
      c.slot = slot;
      c.index = delivered;
      Status st = on_chunk(c);
      if (!st) return fail(std::move(st).error());
      stats.bytes += to - from;
      slot_used[slot] = true;
      free_slots.push_back(slot);
      ++delivered;
    }
  }
  stats.chunks = chunks;
  stats.method = method();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::get("io")->debug("{}: read {} bytes at {} in {:.3f} s ({:.2f} GB/s) with {}", name,
                        stats.bytes, offset, stats.seconds, stats.gb_per_s(),
                        method_name(stats.method));
  return stats;
}

Expected<ReadStats> FileReader::read_into(uint64_t offset, std::span<std::byte> dest,
                                          size_t chunk_bytes, int depth) {
  if (dest.empty()) return read(offset, 0, {}, {}, {});
  chunk_bytes = std::max<size_t>(align_up(chunk_bytes), kDirectAlignment);
  // A small read needs no more staging than its aligned extent.
  const uint64_t extent = align_up(offset + dest.size()) - align_down(offset);
  chunk_bytes = std::min<size_t>(chunk_bytes, extent);
  depth = std::clamp(depth, 1, 64);
  std::vector<AlignedBuffer> buffers;
  std::vector<std::span<std::byte>> slots;
  for (int i = 0; i < depth; ++i) {
    buffers.push_back(RS_TRY(AlignedBuffer::allocate(chunk_bytes, kDirectAlignment)));
    slots.push_back(buffers.back().span());
  }
  return read(offset, dest.size(), slots, [&](const Chunk& c) {
    std::memcpy(dest.data() + (c.offset - offset), c.bytes.data(), c.bytes.size());
    return ok();
  });
}

}  // namespace ringserve::io
