// An encoded Envelope, ready for either transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace ringserve::protocol {

// Bytes of the little-endian u32 length that precedes an Envelope on the socket.
inline constexpr size_t kFrameHeaderBytes = 4;

// Owns one encoded Envelope. The storage keeps the Envelope 8-byte aligned
// (the Verifier checks alignment relative to the buffer start, and u64
// fields must be readable in place) with its u32 size prefix just before it,
// so both transports take the bytes without another copy:
//   as_frame(): [u32 LE size][Envelope]  -> socket
//   payload():  [Envelope]               -> ring record / decode_envelope()
// Cheap to move; copying is deleted (frames are handed over, not shared).
class Frame {
 public:
  Frame() = default;
  // Copies an unprefixed, finished FlatBuffer (FlatBufferBuilder::Finish).
  static Frame from_payload(std::span<const uint8_t> payload);

  Frame(Frame&&) noexcept = default;
  Frame& operator=(Frame&&) noexcept = default;
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

  std::span<const uint8_t> as_frame() const noexcept;
  std::span<const uint8_t> payload() const noexcept;
  bool empty() const noexcept { return storage_ == nullptr; }

 private:
  // 8 bytes of head room: [4 unused][u32 size][payload...]
  std::unique_ptr<uint64_t[]> storage_;
  size_t size_ = 0;  // payload bytes
};

}  // namespace ringserve::protocol
