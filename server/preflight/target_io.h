// Reads and writes of the few things --apply may change: sysfs/procfs
// attribute files and two bytes of a device's config file. Behind an
// interface so tests can stand in for hardware that ignores a write (a
// virtualized register) without a real device.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "ringserve/common/expected.h"

namespace ringserve::preflight {

class TargetIo {
 public:
  virtual ~TargetIo() = default;
  // Attribute text without the trailing newline.
  virtual Expected<std::string> read_text(const std::filesystem::path& path) = 0;
  virtual Status write_text(const std::filesystem::path& path, std::string_view value) = 0;
  // Little-endian 16-bit register at `offset` of a config file.
  virtual Expected<uint16_t> read_u16(const std::filesystem::path& config, size_t offset) = 0;
  virtual Status write_u16(const std::filesystem::path& config, size_t offset, uint16_t value) = 0;
};

// The real thing: open/read/write/pread/pwrite, errno in the message.
class FileTargetIo : public TargetIo {
 public:
  Expected<std::string> read_text(const std::filesystem::path& path) override;
  Status write_text(const std::filesystem::path& path, std::string_view value) override;
  Expected<uint16_t> read_u16(const std::filesystem::path& config, size_t offset) override;
  Status write_u16(const std::filesystem::path& config, size_t offset, uint16_t value) override;
};

}  // namespace ringserve::preflight
