// The two ends of a single-producer single-consumer ring of variable-size
// records in shared memory (layout: ring_layout.h).
//
// Everything read from the shared bytes is treated as hostile: the peer's
// index is bounds-checked on every load, every record header is validated,
// and payloads are copied out before anyone parses them (the peer could
// change them underneath a parser). A violation returns kProtocolError and
// the endpoint stays failed; the server then disconnects that client.
//
// Waking: each ring has two doorbells (doorbell.h). The reader sleeps on
// data_bell, the writer on space_bell (full ring). A sleeper first announces
// itself in shared memory, then re-checks, then sleeps; the other side rings
// only when it sees the announcement. Both sides put a seq_cst fence between
// their store and their load, so at least one of them sees the other's store
// and no wakeup is lost.
//
// Thread-safety: one RingWriter and one RingReader per ring, each used by one
// thread at a time (wrap it in a mutex for many producers).
//
// Event-loop use (never blocks), reader side:
//   for (;;) {
//     auto got = reader.try_read(buf);  // error -> disconnect
//     if (*got) { handle(buf); continue; }
//     if (reader.prepare_wait()) continue;   // something arrived meanwhile
//     co_await async_wait(reader.wait_fd());  // readable
//     reader.finish_wait();
//   }
// Writer side with a full ring: prepare_wait(bytes) / wait on wait_fd() /
// finish_wait() the same way, then try_write() again.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ringserve/common/expected.h"
#include "ringserve/protocol/doorbell.h"
#include "ringserve/protocol/ring_layout.h"

namespace ringserve::protocol {

struct WaitOptions {
  // Busy-poll this long before announcing a sleep (0: sleep at once).
  std::chrono::nanoseconds spin = std::chrono::microseconds(50);
  // Give up after this long with kTimeout; negative: wait forever.
  std::chrono::nanoseconds timeout = std::chrono::nanoseconds(-1);
};

// Zeroes the control block of a fresh ring. Only the creator calls this,
// before the peer has the memory.
Status init_ring(std::span<std::byte> region, uint32_t capacity);

// What an endpoint needs: the ring's region (ring_region_bytes(capacity),
// 64-byte aligned), its two doorbells, and an owner that keeps the memory
// and doorbells alive as long as the endpoint exists (may be empty when the
// caller guarantees that itself).
struct RingEndpointArgs {
  std::span<std::byte> region;
  uint32_t capacity = 0;
  const Doorbell* data_bell = nullptr;
  const Doorbell* space_bell = nullptr;
  std::shared_ptr<const void> keepalive;
};

class RingWriter {
 public:
  // Validates the arguments and the current head/tail (kProtocolError).
  static Expected<RingWriter> attach(RingEndpointArgs args);

  RingWriter() = default;

  size_t max_payload() const noexcept { return ring_max_payload(capacity_); }
  uint32_t capacity() const noexcept { return capacity_; }

  // Non-blocking. true: the record is published (and the reader rung if it
  // announced a sleep). false: not enough free space now; nothing written.
  // kTooLarge: payload > max_payload(). kProtocolError: the shared tail is
  // impossible (sticky).
  Expected<bool> try_write(std::span<const uint8_t> payload);

  // Spins, then sleeps on space_bell until written. kTimeout when
  // options.timeout passes (nothing written).
  Status write(std::span<const uint8_t> payload, const WaitOptions& options = {});

  // Event-loop waiting for space for `payload_bytes`: announce; returns true
  // when that space is already free (retry now instead of waiting).
  bool prepare_wait(size_t payload_bytes);
  // After wait_fd() was readable (or to abandon the wait): drains the
  // doorbell and withdraws the announcement.
  void finish_wait();
  int wait_fd() const noexcept;

  // Free bytes as of the last look at the reader's tail (a lower bound).
  uint64_t free_bytes_hint() const noexcept { return capacity_ - (head_ - cached_tail_); }

 private:
  Expected<bool> refresh_tail();
  bool has_room(uint64_t need_contiguous) const noexcept;
  uint64_t bytes_needed(size_t payload_bytes) const noexcept;

  RingControl* control_ = nullptr;
  std::byte* data_ = nullptr;
  uint32_t capacity_ = 0;
  uint64_t head_ = 0;         // private copy; the shared head is only ever stored
  uint64_t cached_tail_ = 0;  // last validated value of the shared tail
  const Doorbell* data_bell_ = nullptr;
  const Doorbell* space_bell_ = nullptr;
  bool failed_ = false;
  std::shared_ptr<const void> keepalive_;
};

class RingReader {
 public:
  static Expected<RingReader> attach(RingEndpointArgs args);

  RingReader() = default;

  uint32_t capacity() const noexcept { return capacity_; }

  // Non-blocking. true: the next record's payload is now in `out` (resized;
  // std::vector storage is aligned for decode_envelope) and its space is
  // released to the writer (rung if it waits). false: the ring is empty.
  // kProtocolError on any violation (sticky).
  Expected<bool> try_read(std::vector<uint8_t>& out);

  // Spins, then sleeps on data_bell until a record arrives. kTimeout when
  // options.timeout passes.
  Status read(std::vector<uint8_t>& out, const WaitOptions& options = {});

  // Event-loop waiting: announce; returns true when a record (or garbage)
  // is already there (call try_read() instead of waiting).
  bool prepare_wait();
  void finish_wait();
  int wait_fd() const noexcept;

 private:
  Expected<bool> poll_head();
  void release_record(uint64_t bytes);

  RingControl* control_ = nullptr;
  const std::byte* data_ = nullptr;
  uint32_t capacity_ = 0;
  uint64_t tail_ = 0;         // private copy; the shared tail is only ever stored
  uint64_t cached_head_ = 0;  // last validated value of the shared head
  const Doorbell* data_bell_ = nullptr;
  const Doorbell* space_bell_ = nullptr;
  bool failed_ = false;
  std::shared_ptr<const void> keepalive_;
};

}  // namespace ringserve::protocol
