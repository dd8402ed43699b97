#include "preflight/config_decoder.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace ringserve::preflight {
namespace {

// Standard header (type 0 and 1).
constexpr size_t kVendorId = 0x00;
constexpr size_t kDeviceId = 0x02;
constexpr size_t kStatus = 0x06;
constexpr size_t kClassRevision = 0x08;
constexpr size_t kHeaderType = 0x0e;
constexpr size_t kSecondaryBus = 0x19;
constexpr size_t kSubordinateBus = 0x1a;
constexpr size_t kCapabilityList = 0x34;
constexpr uint16_t kStatusCapList = 0x10;

constexpr uint8_t kCapIdMsi = 0x05;
constexpr uint8_t kCapIdExp = 0x10;
constexpr uint8_t kCapIdMsix = 0x11;
constexpr uint16_t kExtCapIdAer = 0x0001;

// PCIe capability register offsets.
constexpr size_t kExpFlags = 0x02;
constexpr size_t kExpDevCap = 0x04;
constexpr size_t kExpDevCtl = 0x08;
constexpr size_t kExpLnkCap = 0x0c;
constexpr size_t kExpLnkCtl = 0x10;
constexpr size_t kExpLnkSta = 0x12;
constexpr size_t kExpLnkCap2 = 0x2c;
constexpr size_t kExpLnkCtl2 = 0x30;
constexpr size_t kExpLnkSta2 = 0x32;

// A capability list longer than this is a loop or garbage.
constexpr int kMaxCapabilities = 48;
constexpr int kMaxExtCapabilities = (4096 - 256) / 4;

Aspm aspm_from_bits(unsigned bits) {
  return Aspm{(bits & 1) != 0, (bits & 2) != 0};
}

std::string missing_note(const char* what, size_t cap, size_t offset, size_t width) {
  return fmt::format("{} (cap+0x{:02x}, bytes 0x{:03x}-0x{:03x}) not in the config data", what,
                     offset, cap + offset, cap + offset + width - 1);
}

void decode_link(const ConfigBytes& cfg, size_t cap, PortView& view) {
  auto lnkcap = cfg.u32(cap + kExpLnkCap);
  auto lnkctl = cfg.u16(cap + kExpLnkCtl);
  auto lnksta = cfg.u16(cap + kExpLnkSta);
  if (!lnkcap) view.notes.push_back(missing_note("LnkCap", cap, kExpLnkCap, 4));
  if (!lnkctl) view.notes.push_back(missing_note("LnkCtl", cap, kExpLnkCtl, 2));
  if (!lnksta) view.notes.push_back(missing_note("LnkSta", cap, kExpLnkSta, 2));
  LinkValues& link = view.link;
  if (lnkcap) {
    link.cap_speed_gts = speed_code_to_gts(*lnkcap & 0xf);
    link.cap_width = static_cast<int>((*lnkcap >> 4) & 0x3f);
    view.aspm_cap = aspm_from_bits((*lnkcap >> 10) & 3);
  }
  if (lnkctl) view.aspm = aspm_from_bits(*lnkctl & 3);
  if (lnksta) {
    link.speed_gts = speed_code_to_gts(*lnksta & 0xf);
    link.width = static_cast<int>((*lnksta >> 4) & 0x3f);
  }
  // lspci compares LnkSta with the function's own LnkCap, on raw codes,
  // except on ports that face downstream (their LnkCap is the slot's).
  if (lnkcap && lnksta && !view.is_downstream_facing()) {
    link.speed_downgraded = (*lnksta & 0xf) < (*lnkcap & 0xf);
    link.width_downgraded = ((*lnksta >> 4) & 0x3f) < ((*lnkcap >> 4) & 0x3f);
  }
  if (view.pcie_version.value_or(0) >= 2) {
    if (auto lnkcap2 = cfg.u32(cap + kExpLnkCap2)) {
      for (unsigned bit = 1; bit <= 7; ++bit) {
        if (*lnkcap2 & (1u << bit)) {
          if (auto gts = speed_code_to_gts(bit)) link.supported_speeds_gts.push_back(*gts);
        }
      }
    }
    if (auto lnkctl2 = cfg.u16(cap + kExpLnkCtl2)) {
      link.target_speed_gts = speed_code_to_gts(*lnkctl2 & 0xf);
    }
    if (auto lnksta2 = cfg.u16(cap + kExpLnkSta2); lnksta2 && link.speed_gts >= 8.0) {
      link.equalization_complete = (*lnksta2 & 0x2) != 0;
    }
  }
}

void decode_express(const ConfigBytes& cfg, size_t cap, PortView& view) {
  view.has_pcie = true;
  view.pcie_cap_offset = static_cast<int>(cap);
  auto flags = cfg.u16(cap + kExpFlags);
  if (!flags) {
    view.notes.push_back(missing_note("PCIe capability flags", cap, kExpFlags, 2));
    return;
  }
  view.pcie_version = *flags & 0xf;
  view.port_type = (*flags >> 4) & 0xf;

  if (auto devcap = cfg.u32(cap + kExpDevCap)) {
    view.mps_cap = size_code_to_bytes(*devcap & 7);
  } else {
    view.notes.push_back(missing_note("DevCap", cap, kExpDevCap, 4));
  }
  if (auto devctl = cfg.u16(cap + kExpDevCtl)) {
    view.devctl = *devctl;
    view.mps = size_code_to_bytes((*devctl >> 5) & 7);
    view.mrrs = size_code_to_bytes((*devctl >> 12) & 7);
  } else {
    view.notes.push_back(missing_note("DevCtl", cap, kExpDevCtl, 2));
  }
  const bool linkless = view.port_type == static_cast<int>(PortType::kRootComplexEndpoint) ||
                        view.port_type == static_cast<int>(PortType::kRootComplexEventCollector);
  view.has_link = !linkless;
  if (view.has_link) decode_link(cfg, cap, view);
}

void walk_capabilities(const ConfigBytes& cfg, PortView& view) {
  auto status = cfg.u16(kStatus);
  if (!status || !(*status & kStatusCapList)) return;
  auto ptr = cfg.u8(kCapabilityList);
  std::array<bool, 256> seen{};
  int count = 0;
  size_t pos = ptr ? (*ptr & 0xfc) : 0;
  while (pos >= 0x40 && count++ < kMaxCapabilities) {
    if (seen[pos]) {
      view.notes.push_back(fmt::format("capability list loops at 0x{:02x}", pos));
      break;
    }
    seen[pos] = true;
    auto id = cfg.u8(pos);
    auto next = cfg.u8(pos + 1);
    if (!id || !next) {
      // An unprivileged 64-byte read ends here: that is the usual case.
      view.notes.push_back(fmt::format(
          "capability at 0x{:02x} is beyond the {} config bytes read (read config space as "
          "root to see the PCIe capability)",
          pos, cfg.known_count()));
      break;
    }
    if (*id == 0xff) break;  // reads of a vanished device or a masked range
    if (*id == kCapIdExp && !view.has_pcie) {
      decode_express(cfg, pos, view);
    } else if (*id == kCapIdMsi) {
      if (auto ctl = cfg.u16(pos + 2)) view.msi_enabled = (*ctl & 1) != 0;
    } else if (*id == kCapIdMsix) {
      if (auto ctl = cfg.u16(pos + 2)) view.msix_enabled = (*ctl & 0x8000) != 0;
    }
    pos = *next & 0xfc;
  }
}

void walk_extended_capabilities(const ConfigBytes& cfg, PortView& view) {
  if (!view.has_pcie || cfg.size() <= 0x100) return;
  size_t pos = 0x100;
  std::array<bool, 4096 / 4> seen{};
  for (int count = 0; count < kMaxExtCapabilities; ++count) {
    auto header = cfg.u32(pos);
    if (!header || *header == 0 || *header == 0xffffffffu) return;
    if (seen[pos / 4]) return;
    seen[pos / 4] = true;
    if ((*header & 0xffff) == kExtCapIdAer) {
      view.aer_uncorrectable_status = cfg.u32(pos + 0x04);
      view.aer_correctable_status = cfg.u32(pos + 0x10);
    }
    size_t next = (*header >> 20) & 0xffc;
    if (next < 0x100) return;
    pos = next;
  }
}

}  // namespace

ConfigBytes::ConfigBytes(std::span<const uint8_t> bytes)
    : bytes_(bytes.begin(), bytes.end()), known_(bytes.size(), 1) {}

ConfigBytes::ConfigBytes(std::span<const uint8_t> bytes, std::span<const uint8_t> known)
    : bytes_(bytes.begin(), bytes.end()), known_(bytes.size(), 0) {
  const size_t n = std::min(bytes.size(), known.size());
  for (size_t i = 0; i < n; ++i) known_[i] = known[i] ? 1 : 0;
}

size_t ConfigBytes::known_count() const {
  return static_cast<size_t>(std::count(known_.begin(), known_.end(), 1));
}

bool ConfigBytes::known(size_t offset, size_t width) const {
  if (offset > bytes_.size() || width > bytes_.size() - offset) return false;
  for (size_t i = 0; i < width; ++i) {
    if (!known_[offset + i]) return false;
  }
  return true;
}

std::optional<uint8_t> ConfigBytes::u8(size_t offset) const {
  if (!known(offset, 1)) return std::nullopt;
  return bytes_[offset];
}

std::optional<uint16_t> ConfigBytes::u16(size_t offset) const {
  if (!known(offset, 2)) return std::nullopt;
  return static_cast<uint16_t>(bytes_[offset] | (bytes_[offset + 1] << 8));
}

std::optional<uint32_t> ConfigBytes::u32(size_t offset) const {
  if (!known(offset, 4)) return std::nullopt;
  return static_cast<uint32_t>(bytes_[offset]) | (static_cast<uint32_t>(bytes_[offset + 1]) << 8) |
         (static_cast<uint32_t>(bytes_[offset + 2]) << 16) |
         (static_cast<uint32_t>(bytes_[offset + 3]) << 24);
}

Expected<PortView> decode_config(const ConfigBytes& cfg, std::string bdf) {
  auto vendor = cfg.u16(kVendorId);
  auto device = cfg.u16(kDeviceId);
  auto class_rev = cfg.u32(kClassRevision);
  auto header_type = cfg.u8(kHeaderType);
  if (!vendor || !device || !class_rev || !header_type) {
    return make_error(Errc::kCorruptData,
                      "{}: the config data lacks the identifying header (bytes 0x00-0x0f)",
                      bdf.empty() ? "device" : bdf);
  }
  if (*vendor == 0xffff) {
    return make_error(Errc::kUnavailable,
                      "{}: the device does not respond (vendor id 0xffff; config space reads all "
                      "0xFF: powered off, in D3cold or gone from the bus)",
                      bdf.empty() ? "device" : bdf);
  }
  PortView view;
  view.bdf = std::move(bdf);
  view.vendor = *vendor;
  view.device = *device;
  view.class_code = *class_rev >> 8;
  view.config_bytes_known = cfg.known_count();
  view.is_bridge = (*header_type & 0x7f) == 1;
  if (view.is_bridge) {
    view.secondary_bus = cfg.u8(kSecondaryBus);
    view.subordinate_bus = cfg.u8(kSubordinateBus);
  }
  walk_capabilities(cfg, view);
  walk_extended_capabilities(cfg, view);
  return view;
}

}  // namespace ringserve::preflight
