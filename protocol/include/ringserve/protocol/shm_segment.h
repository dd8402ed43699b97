// The shared-memory segment of one shm session: a sealed memfd holding a
// header and two rings, plus the four eventfd doorbells of those rings.
//
//   [SegmentHeader, padded to 4 KiB][request ring region][event ring region]
//
// The request ring carries client -> server Envelopes, the event ring
// server -> client Envelopes. The server create()s the segment when a Hello
// asks for it and sends fds() with SCM_RIGHTS (fd_passing.h) in the HelloAck
// frame, in SegmentFd order. The client attach()es from the received fds and
// validates the header against the mapped size before trusting anything.
//
// Who waits on which fd:
//   server: request data bell (requests arrived), event space bell (room
//           for events after a full ring)
//   client: event data bell, request space bell
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "ringserve/common/expected.h"
#include "ringserve/protocol/doorbell.h"
#include "ringserve/protocol/shm_ring.h"
#include "ringserve/protocol/unique_fd.h"

namespace ringserve::protocol {

inline constexpr uint64_t kSegmentMagic = 0x3147455353525352ull;  // "RSRSSEG1" in memory
inline constexpr uint32_t kSegmentLayoutVersion = 1;
inline constexpr uint32_t kSegmentHeaderBytes = 4096;
inline constexpr uint32_t kDefaultRingBytes = 1u << 20;

// At offset 0 of the memfd. Copied and validated once on attach; never
// re-read afterwards.
struct SegmentHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;
  uint64_t total_bytes;
  uint64_t request_ring_offset;
  uint32_t request_ring_capacity;
  uint32_t reserved0;
  uint64_t event_ring_offset;
  uint32_t event_ring_capacity;
  uint32_t reserved1;
};
static_assert(std::is_trivially_copyable_v<SegmentHeader>);

// Order of the fds in the SCM_RIGHTS message.
enum SegmentFd : size_t {
  kSegmentMemfd = 0,
  kRequestDataBell,
  kRequestSpaceBell,
  kEventDataBell,
  kEventSpaceBell,
  kSegmentFdCount,
};

struct SegmentOptions {
  // Ring data bytes; rounded up to a power of two and clamped to
  // [kRingMinCapacity, max_ring_bytes]. 0: kDefaultRingBytes.
  uint32_t request_ring_bytes = kDefaultRingBytes;
  uint32_t event_ring_bytes = kDefaultRingBytes;
  uint32_t max_ring_bytes = 16u << 20;
  std::string name = "ringserve";  // memfd name, visible in /proc/<pid>/fd
};

class ShmSegment {
 public:
  // Server side: memfd (MFD_CLOEXEC | MFD_ALLOW_SEALING), sized, sealed with
  // F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, mapped, header and rings
  // initialised, doorbells created.
  static Expected<ShmSegment> create(const SegmentOptions& options);

  // Client side: takes the kSegmentFdCount received fds (SegmentFd order).
  // Checks the memfd is sealed against shrinking (so the mapping cannot
  // fault), the doorbells are eventfds, and the header is consistent with
  // the mapped size. Errors: kProtocolError / kVersionMismatch / kIoError.
  static Expected<ShmSegment> attach(std::span<UniqueFd> fds, uint64_t max_bytes = 1ull << 31);

  ShmSegment() = default;

  // The fds to pass to the peer, in SegmentFd order (still owned here).
  std::array<int, kSegmentFdCount> fds() const;
  uint64_t size_bytes() const;
  uint32_t request_ring_capacity() const;
  uint32_t event_ring_capacity() const;

  // The endpoints keep the segment's mapping and doorbells alive.
  Expected<RingWriter> request_writer() const;  // client
  Expected<RingReader> request_reader() const;  // server
  Expected<RingWriter> event_writer() const;    // server
  Expected<RingReader> event_reader() const;    // client

  // The doorbells each side waits on (for event loops).
  const Doorbell& request_data_bell() const;
  const Doorbell& request_space_bell() const;
  const Doorbell& event_data_bell() const;
  const Doorbell& event_space_bell() const;

  struct State;  // mapping + fds; shared with the ring endpoints

 private:
  explicit ShmSegment(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace ringserve::protocol
