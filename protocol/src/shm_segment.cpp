#include "ringserve/protocol/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

namespace ringserve::protocol {

struct ShmSegment::State {
  UniqueFd memfd;
  std::byte* base = nullptr;
  size_t bytes = 0;
  SegmentHeader header{};  // validated private copy
  Doorbell bells[4];       // SegmentFd order minus the memfd

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (base != nullptr) ::munmap(base, bytes);
  }
  const Doorbell& bell(SegmentFd which) const { return bells[which - kRequestDataBell]; }
};

namespace {

constexpr uint64_t kRingRegionAlignment = 4096;

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

Error os_error(std::string_view what) {
  return make_error(Errc::kIoError, "shm segment: {}: {}", what, std::strerror(errno));
}

uint32_t clamp_capacity(uint32_t requested, uint32_t max_bytes) {
  uint64_t want = requested == 0 ? kDefaultRingBytes : requested;
  const uint64_t upper = std::bit_floor(std::max<uint64_t>(max_bytes, kRingMinCapacity));
  want = std::min<uint64_t>(std::max<uint64_t>(want, kRingMinCapacity), upper);
  return static_cast<uint32_t>(std::min<uint64_t>(std::bit_ceil(want), upper));
}

// Checks a header against the size of the mapping it came from. Every
// offset and size is checked for overflow before it is added.
Status validate_header(const SegmentHeader& h, uint64_t mapped_bytes) {
  if (h.magic != kSegmentMagic) return make_error(Errc::kProtocolError, "shm segment: bad magic");
  if (h.version != kSegmentLayoutVersion) {
    return make_error(Errc::kVersionMismatch, "shm segment: layout version {}, expected {}",
                      h.version, kSegmentLayoutVersion);
  }
  if (h.header_bytes != kSegmentHeaderBytes || h.total_bytes != mapped_bytes) {
    return make_error(Errc::kProtocolError,
                      "shm segment: header says {} header / {} total bytes, mapped {}",
                      h.header_bytes, h.total_bytes, mapped_bytes);
  }
  struct Ring {
    const char* name;
    uint64_t offset;
    uint32_t capacity;
  };
  const Ring rings[] = {{"request", h.request_ring_offset, h.request_ring_capacity},
                        {"event", h.event_ring_offset, h.event_ring_capacity}};
  for (const auto& r : rings) {
    if (auto st = validate_ring_capacity(r.capacity); !st) {
      return make_error(Errc::kProtocolError, "shm segment: {} ring: {}", r.name,
                        st.error().message);
    }
    if (r.offset < h.header_bytes || r.offset % kRingRegionAlignment != 0 ||
        r.offset > mapped_bytes || ring_region_bytes(r.capacity) > mapped_bytes - r.offset) {
      return make_error(Errc::kProtocolError,
                        "shm segment: {} ring at {} (+{}) outside the {} mapped bytes", r.name,
                        r.offset, ring_region_bytes(r.capacity), mapped_bytes);
    }
  }
  const auto& a = rings[0];
  const auto& b = rings[1];
  const bool disjoint = a.offset + ring_region_bytes(a.capacity) <= b.offset ||
                        b.offset + ring_region_bytes(b.capacity) <= a.offset;
  if (!disjoint) return make_error(Errc::kProtocolError, "shm segment: rings overlap");
  return ok();
}

Expected<std::byte*> map_shared(int fd, size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return os_error("mmap");
  return static_cast<std::byte*>(p);
}

}  // namespace

Expected<ShmSegment> ShmSegment::create(const SegmentOptions& options) {
  auto state = std::make_shared<State>();
  SegmentHeader& h = state->header;
  h.magic = kSegmentMagic;
  h.version = kSegmentLayoutVersion;
  h.header_bytes = kSegmentHeaderBytes;
  h.request_ring_capacity = clamp_capacity(options.request_ring_bytes, options.max_ring_bytes);
  h.event_ring_capacity = clamp_capacity(options.event_ring_bytes, options.max_ring_bytes);
  h.request_ring_offset = kSegmentHeaderBytes;
  h.event_ring_offset = align_up(h.request_ring_offset + ring_region_bytes(h.request_ring_capacity),
                                 kRingRegionAlignment);
  h.total_bytes = align_up(h.event_ring_offset + ring_region_bytes(h.event_ring_capacity),
                           kRingRegionAlignment);

  int fd = ::memfd_create(options.name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return os_error("memfd_create");
  state->memfd.reset(fd);
  if (::ftruncate(fd, static_cast<off_t>(h.total_bytes)) != 0) return os_error("ftruncate");
  // Sealed before the peer sees it: a client cannot shrink the file under
  // the server's mapping (SIGBUS) nor grow it.
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return os_error("F_ADD_SEALS");
  }
  state->bytes = h.total_bytes;
  state->base = RS_TRY(map_shared(fd, state->bytes));
  std::memcpy(state->base, &h, sizeof(h));
  RS_TRY_STATUS(
      init_ring({state->base + h.request_ring_offset, ring_region_bytes(h.request_ring_capacity)},
                h.request_ring_capacity));
  RS_TRY_STATUS(
      init_ring({state->base + h.event_ring_offset, ring_region_bytes(h.event_ring_capacity)},
                h.event_ring_capacity));
  for (auto& bell : state->bells) bell = RS_TRY(Doorbell::create());
  return ShmSegment(std::move(state));
}

Expected<ShmSegment> ShmSegment::attach(std::span<UniqueFd> fds, uint64_t max_bytes) {
  if (fds.size() != kSegmentFdCount) {
    return make_error(Errc::kProtocolError, "shm segment: expected {} fds, got {}",
                      static_cast<size_t>(kSegmentFdCount), fds.size());
  }
  auto state = std::make_shared<State>();
  state->memfd = std::move(fds[kSegmentMemfd]);
  const int fd = state->memfd.get();
  if (fd < 0) return make_error(Errc::kProtocolError, "shm segment: no memfd");
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) return os_error("F_GET_SEALS (not a memfd?)");
  if ((seals & F_SEAL_SHRINK) == 0) {
    return make_error(Errc::kProtocolError, "shm segment: memfd is not sealed against shrinking");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_error("fstat");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (!S_ISREG(st.st_mode) || size < kSegmentHeaderBytes || size > max_bytes) {
    return make_error(Errc::kProtocolError, "shm segment: {} bytes outside [{}, {}]", size,
                      kSegmentHeaderBytes, max_bytes);
  }
  state->bytes = size;
  state->base = RS_TRY(map_shared(fd, state->bytes));
  std::memcpy(&state->header, state->base, sizeof(SegmentHeader));
  RS_TRY_STATUS(validate_header(state->header, size));
  for (size_t i = kRequestDataBell; i < kSegmentFdCount; ++i) {
    auto bell = Doorbell::adopt(std::move(fds[i]));
    if (!bell) return with_context(std::move(bell).error(), "shm segment");
    state->bells[i - kRequestDataBell] = std::move(*bell);
  }
  return ShmSegment(std::move(state));
}

std::array<int, kSegmentFdCount> ShmSegment::fds() const {
  return {state_->memfd.get(), state_->bells[0].fd(), state_->bells[1].fd(), state_->bells[2].fd(),
          state_->bells[3].fd()};
}

uint64_t ShmSegment::size_bytes() const {
  return state_ ? state_->bytes : 0;
}
uint32_t ShmSegment::request_ring_capacity() const {
  return state_ ? state_->header.request_ring_capacity : 0;
}
uint32_t ShmSegment::event_ring_capacity() const {
  return state_ ? state_->header.event_ring_capacity : 0;
}

const Doorbell& ShmSegment::request_data_bell() const {
  return state_->bell(kRequestDataBell);
}
const Doorbell& ShmSegment::request_space_bell() const {
  return state_->bell(kRequestSpaceBell);
}
const Doorbell& ShmSegment::event_data_bell() const {
  return state_->bell(kEventDataBell);
}
const Doorbell& ShmSegment::event_space_bell() const {
  return state_->bell(kEventSpaceBell);
}

namespace {

RingEndpointArgs endpoint_args(const std::shared_ptr<ShmSegment::State>& s, bool request_ring) {
  const auto& h = s->header;
  const uint64_t offset = request_ring ? h.request_ring_offset : h.event_ring_offset;
  const uint32_t capacity = request_ring ? h.request_ring_capacity : h.event_ring_capacity;
  return RingEndpointArgs{
      {s->base + offset, ring_region_bytes(capacity)},
      capacity,
      &s->bell(request_ring ? kRequestDataBell : kEventDataBell),
      &s->bell(request_ring ? kRequestSpaceBell : kEventSpaceBell),
      s,
  };
}

}  // namespace

Expected<RingWriter> ShmSegment::request_writer() const {
  if (!state_) return make_error(Errc::kInvalidArgument, "shm segment: empty");
  return RingWriter::attach(endpoint_args(state_, true));
}
Expected<RingReader> ShmSegment::request_reader() const {
  if (!state_) return make_error(Errc::kInvalidArgument, "shm segment: empty");
  return RingReader::attach(endpoint_args(state_, true));
}
Expected<RingWriter> ShmSegment::event_writer() const {
  if (!state_) return make_error(Errc::kInvalidArgument, "shm segment: empty");
  return RingWriter::attach(endpoint_args(state_, false));
}
Expected<RingReader> ShmSegment::event_reader() const {
  if (!state_) return make_error(Errc::kInvalidArgument, "shm segment: empty");
  return RingReader::attach(endpoint_args(state_, false));
}

}  // namespace ringserve::protocol
