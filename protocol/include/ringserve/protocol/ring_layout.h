// Byte layout of one SPSC ring in shared memory. Both processes map the same
// bytes at different addresses, so the layout holds offsets and counters,
// never pointers.
//
//   region = [RingControl: 256 bytes][data: capacity bytes]
//   record = [RecordHeader: 8 bytes][payload][zero padding to 8 bytes]
//
// head and tail count bytes since the ring was created (they never wrap in
// practice: 2^64 bytes); a position maps to data[pos % capacity]. The ring
// holds head - tail bytes. A record never straddles the end of the data
// area: when the next record does not fit before it, the writer fills the
// rest with one padding record and starts again at offset 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ringserve/common/expected.h"

namespace ringserve::protocol {

inline constexpr size_t kRingCacheLine = 64;
inline constexpr size_t kRingControlBytes = 4 * kRingCacheLine;
inline constexpr size_t kRingRecordHeaderBytes = 8;
inline constexpr size_t kRingAlignment = 8;
inline constexpr uint32_t kRingMinCapacity = 256;
inline constexpr uint32_t kRingMaxCapacity = 1u << 30;

// Accessed only through std::atomic_ref. Each field has its own cache line so
// the producer's and consumer's stores do not false-share.
struct RingControl {
  alignas(kRingCacheLine) uint64_t head;  // written by the producer only
  alignas(kRingCacheLine) uint64_t tail;  // written by the consumer only
  // Set by the consumer before it sleeps; the producer clears it and rings.
  alignas(kRingCacheLine) uint32_t reader_waiting;
  // Set by the producer before it sleeps on a full ring; the consumer clears it and rings.
  alignas(kRingCacheLine) uint32_t writer_waiting;
};
static_assert(sizeof(RingControl) == kRingControlBytes);
static_assert(std::is_trivially_copyable_v<RingControl>);

enum class RecordKind : uint32_t { kData = 0x52454344, kPadding = 0x50414444 };  // "DCER", "DDAP"

struct RecordHeader {
  uint32_t length;  // payload bytes (for padding: bytes after this header)
  uint32_t kind;    // RecordKind; anything else is a protocol violation
};
static_assert(sizeof(RecordHeader) == kRingRecordHeaderBytes);

// Capacity must be a power of two in [kRingMinCapacity, kRingMaxCapacity].
Status validate_ring_capacity(uint64_t capacity);

constexpr size_t ring_region_bytes(uint32_t capacity) {
  return kRingControlBytes + capacity;
}

// Largest payload a ring accepts: a record of at most half the capacity
// always fits once the reader has caught up, whatever the wrap position.
constexpr size_t ring_max_payload(uint32_t capacity) {
  return capacity / 2 - kRingRecordHeaderBytes;
}

// Bytes one record of `payload` bytes occupies in the data area.
constexpr uint64_t ring_record_bytes(uint64_t payload) {
  return (kRingRecordHeaderBytes + payload + kRingAlignment - 1) & ~uint64_t{kRingAlignment - 1};
}

}  // namespace ringserve::protocol
