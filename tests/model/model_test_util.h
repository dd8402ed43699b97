// Small helpers shared by the rs_model tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ringserve::model::test {

// 8-byte little-endian length + header text + `data_size` data bytes (0..255
// repeating).
inline std::vector<std::byte> safetensors_bytes(const std::string& header, size_t data_size,
                                                uint64_t declared_length = UINT64_MAX) {
  uint64_t n = declared_length == UINT64_MAX ? header.size() : declared_length;
  std::vector<std::byte> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>(n >> (8 * i)));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (size_t i = 0; i < data_size; ++i) out.push_back(static_cast<std::byte>(i & 0xff));
  return out;
}

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace ringserve::model::test
