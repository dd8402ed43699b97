// Decodes raw PCI configuration bytes into a PortView: the standard header,
// the PCIe capability (DevCap/DevCtl, LnkCap/LnkCtl/LnkSta, LnkCap2/LnkCtl2),
// MSI/MSI-X enables and the AER status registers. Pure: no I/O, so the same
// code serves sysfs `config` files, lspci dumps, libpci and the fuzzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "preflight/port_view.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

// Config bytes plus which of them were actually read. A byte that is not
// known (beyond a short read, a row missing from a dump) is never decoded as
// if it were 0xFF the way lspci does: the fields it feeds stay empty.
class ConfigBytes {
 public:
  ConfigBytes() = default;
  // All of `bytes` known.
  explicit ConfigBytes(std::span<const uint8_t> bytes);
  // `known[i] != 0` marks bytes[i] as read; both spans have the same length.
  ConfigBytes(std::span<const uint8_t> bytes, std::span<const uint8_t> known);

  size_t size() const { return bytes_.size(); }
  size_t known_count() const;
  bool known(size_t offset, size_t width) const;
  std::optional<uint8_t> u8(size_t offset) const;
  std::optional<uint16_t> u16(size_t offset) const;
  std::optional<uint32_t> u32(size_t offset) const;
  std::span<const uint8_t> bytes() const { return bytes_; }
  std::span<const uint8_t> known_mask() const { return known_; }

 private:
  std::basic_string<uint8_t> bytes_;
  std::basic_string<uint8_t> known_;
};

// Errors: fewer than the 16 header bytes that identify a function
// (kCorruptData), or a function that does not answer (vendor 0xffff, the
// all-FF read of a device in D3cold or off the bus: kUnavailable).
// Everything else decodes partially, with `notes` saying what is missing.
Expected<PortView> decode_config(const ConfigBytes& config, std::string bdf = {});

}  // namespace ringserve::preflight
