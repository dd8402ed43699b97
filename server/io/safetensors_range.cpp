#include "io/safetensors_range.h"

#include <array>

namespace ringserve::io {

Expected<ByteRange> safetensors_data_range(FileReader& reader) {
  const std::string name = reader.path().string();
  if (reader.size() < 8)
    return make_error(Errc::kCorruptData, "{}: {} bytes is too short for a safetensors file", name,
                      reader.size());
  std::array<std::byte, 8> prefix{};
  RS_TRY(reader.read_into(0, prefix));
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | static_cast<uint8_t>(prefix[i]);
  if (header > kMaxHeaderBytes)
    return make_error(Errc::kTooLarge, "{}: header of {} bytes is above the {} byte limit", name,
                      header, kMaxHeaderBytes);
  if (header > reader.size() - 8)
    return make_error(Errc::kCorruptData, "{}: header of {} bytes runs past the end ({} bytes)",
                      name, header, reader.size());
  return ByteRange{8 + header, reader.size() - 8 - header};
}

}  // namespace ringserve::io
