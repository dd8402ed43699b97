// libFuzzer: arbitrary bytes as a socket frame (4-byte header + Envelope).
#include <array>
#include <cstring>
#include <vector>

#include "ringserve/protocol/codec.h"

using namespace ringserve::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  DecodeLimits limits;
  limits.max_frame_bytes = 64 * 1024;
  if (size >= kFrameHeaderBytes) {
    std::array<uint8_t, kFrameHeaderBytes> header{};
    std::memcpy(header.data(), data, header.size());
    (void)parse_frame_header(header, limits);
  }
  // The whole input as one Envelope, in aligned storage like a socket reader's.
  std::vector<uint64_t> words(size / 8 + 1);
  if (size != 0) std::memcpy(words.data(), data, size);
  auto message = decode_message({reinterpret_cast<const uint8_t*>(words.data()), size}, limits);
  if (message) {
    // Whatever decodes must re-encode to a buffer that decodes and encodes
    // to the same bytes (bytes, not values: a NaN never equals itself).
    Frame first = encode(*message);
    auto round = decode_message(first.payload(), limits);
    if (!round) __builtin_trap();
    Frame second = encode(*round);
    if (first.payload().size() != second.payload().size() ||
        std::memcmp(first.payload().data(), second.payload().data(), first.payload().size()) != 0) {
      __builtin_trap();
    }
  }
  return 0;
}
