// Read throughput of each rs_io path over one file: GB/s per method, each
// read twice (the second from a warm page cache for the buffered paths;
// O_DIRECT bypasses the cache and measures the device).
//
//   read_bench FILE [--create GB] [--slot MiB] [--slots N] [--threads N] [--warm 1]
//
// --warm 1 runs only the buffered paths, without dropping the file from the
// page cache first: the page-cache copy rate alone, for a file that is cached.
// --create writes FILE with GB gigabytes (1e9) of pseudo-random data first.
// Run 0 of each method starts cold (the file's pages dropped from the page
// cache with fadvise), run 1 warm (the file left cached by run 0 for the
// buffered paths; O_DIRECT reads the device both times).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "io/aligned_buffer.h"
#include "io/file_reader.h"

using namespace ringserve;

namespace {

bool create(const std::string& path, double gb) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  std::vector<uint64_t> block(1 << 20);  // 8 MiB
  std::mt19937_64 rng(42);
  const uint64_t total = static_cast<uint64_t>(gb * 1e9);
  for (uint64_t written = 0; written < total;) {
    for (auto& v : block) v = rng();
    const uint64_t n = std::min<uint64_t>(total - written, block.size() * 8);
    f.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
    written += n;
  }
  return f.good();
}

void drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [--create GB] [--slot MiB] [--slots N]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  size_t slot_mib = 8, nslots = 8;
  int threads = 0;
  bool warm_only = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--create")) {
      if (!create(path, std::atof(argv[i + 1]))) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
      }
    } else if (!std::strcmp(argv[i], "--slot")) {
      slot_mib = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--threads")) {
      threads = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--warm")) {
      warm_only = std::atoi(argv[i + 1]) != 0;
    } else if (!std::strcmp(argv[i], "--slots")) {
      nslots = std::strtoul(argv[i + 1], nullptr, 10);
    }
  }
  std::vector<io::AlignedBuffer> buffers;
  std::vector<std::span<std::byte>> slots;
  for (size_t i = 0; i < nslots; ++i) {
    auto b = io::AlignedBuffer::allocate(slot_mib << 20);
    if (!b) return 1;
    buffers.push_back(std::move(*b));
    slots.push_back(buffers.back().span());
  }
  std::printf("file %s, %zu slots of %zu MiB, %d threads%s\n", path.c_str(), nslots, slot_mib,
              threads, warm_only ? ", warm page cache only" : "");
  struct Case {
    io::Backend backend;
    io::DirectIo direct;
  };
  const Case cases[] = {{io::Backend::kAuto, io::DirectIo::kAuto},
                        {io::Backend::kIoUring, io::DirectIo::kOn},
                        {io::Backend::kIoUring, io::DirectIo::kOff},
                        {io::Backend::kPread, io::DirectIo::kOn},
                        {io::Backend::kPread, io::DirectIo::kOff}};
  for (const Case& c : cases) {
    if (warm_only && c.direct != io::DirectIo::kOff) continue;
    if (!warm_only) drop_cache(path);
    auto reader = io::FileReader::open(path, io::ReaderOptions{c.backend, c.direct, threads});
    if (!reader) {
      std::printf("%-8s direct=%-3s unavailable: %s\n", io::backend_name(c.backend),
                  io::direct_io_name(c.direct), reader.error().to_string().c_str());
      continue;
    }
    for (int run = 0; run < 2; ++run) {
      uint64_t checksum = 0;
      auto stats = reader->read(0, reader->size(), slots, [&](const io::Chunk& ch) {
        // Touch one word per page, as a consumer would, without a full pass.
        for (size_t i = 0; i < ch.bytes.size(); i += 4096)
          checksum += static_cast<uint8_t>(ch.bytes[i]);
        return ok();
      });
      if (!stats) {
        std::printf("%s: %s\n", io::method_name(reader->method()),
                    stats.error().to_string().c_str());
        break;
      }
      std::printf("%-4s %-22s %s: %.2f GB in %.3f s = %.2f GB/s (checksum %llu)\n",
                  c.backend == io::Backend::kAuto ? "auto" : "", io::method_name(stats->method),
                  run == 0 && !warm_only ? "cold" : "warm", stats->bytes / 1e9, stats->seconds,
                  stats->gb_per_s(), static_cast<unsigned long long>(checksum));
    }
  }
  return 0;
}
