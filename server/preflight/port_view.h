// What the preflight knows about one PCI function, whatever it was read from
// (raw config bytes, an `lspci -vv` text, sysfs). Every field is optional
// because each source sees a different subset: an unprivileged reader gets
// 64 bytes of config space, a quoted mail may have lost rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ringserve::preflight {

// PCIe capability "Device/Port Type" (PCIe cap + 0x02, bits 7:4).
enum class PortType : int {
  kEndpoint = 0,
  kLegacyEndpoint = 1,
  kRootPort = 4,
  kSwitchUpstream = 5,
  kSwitchDownstream = 6,
  kPcieToPciBridge = 7,
  kPciToPcieBridge = 8,
  kRootComplexEndpoint = 9,
  kRootComplexEventCollector = 10,
};

const char* port_type_name(int type);

// ASPM bits as both LnkCap (11:10, supported) and LnkCtl (1:0, enabled) encode them.
struct Aspm {
  bool l0s = false;
  bool l1 = false;
  bool any() const { return l0s || l1; }
  friend bool operator==(const Aspm&, const Aspm&) = default;
};

// "disabled", "L0s", "L1", "L0s L1"
std::string aspm_name(Aspm aspm);

struct LinkValues {
  std::optional<double> speed_gts;           // LnkSta current speed
  std::optional<int> width;                  // LnkSta negotiated width
  std::optional<double> cap_speed_gts;       // LnkCap max speed
  std::optional<int> cap_width;              // LnkCap max width
  std::optional<double> target_speed_gts;    // LnkCtl2 target speed (the "BIOS Gen" limit)
  std::vector<double> supported_speeds_gts;  // LnkCap2 vector, when present
  // LnkSta2 bit 1: 8 GT/s+ equalization finished. A link stuck with it
  // clear is marginal (it trained but may retrain or run with errors).
  std::optional<bool> equalization_complete;
  // lspci's own comparison of LnkSta with the device's LnkCap, only for
  // ports whose link is judged from the other end (lspci `link_compare`).
  std::optional<bool> speed_downgraded;
  std::optional<bool> width_downgraded;
};

struct PortView {
  std::string bdf;          // "0000:01:00.0"
  std::string description;  // the text lspci or the dump header gave, if any
  std::optional<uint16_t> vendor;
  std::optional<uint16_t> device;
  std::optional<uint32_t> class_code;  // base << 16 | sub << 8 | prog-if
  bool is_bridge = false;              // header type 1
  std::optional<uint8_t> secondary_bus;
  std::optional<uint8_t> subordinate_bus;

  bool has_pcie = false;  // a PCIe capability was found
  std::optional<int> pcie_cap_offset;
  std::optional<int> pcie_version;
  std::optional<int> port_type;  // PortType value; kept as int for reserved codes
  bool has_link = false;         // the port type has a link (not RC-integrated)
  LinkValues link;

  std::optional<int> mps;          // DevCtl Max_Payload_Size, bytes
  std::optional<int> mps_cap;      // DevCap Max_Payload_Size supported, bytes
  std::optional<int> mrrs;         // DevCtl Max_Read_Request_Size, bytes
  std::optional<Aspm> aspm;        // LnkCtl enabled states
  std::optional<Aspm> aspm_cap;    // LnkCap supported states
  std::optional<uint16_t> devctl;  // raw, for the MRRS read-modify-write
  std::optional<uint32_t> aer_uncorrectable_status;
  std::optional<uint32_t> aer_correctable_status;
  std::optional<bool> msi_enabled;
  std::optional<bool> msix_enabled;

  size_t config_bytes_known = 0;   // 0 when the view came from text
  std::vector<std::string> notes;  // why a field is missing, partial rows, ...

  std::string vendor_device() const;  // "10de:2335" or ""
  bool is_nvidia_gpu() const;         // vendor 10de, display class (0x03xx)
  bool is_downstream_facing() const;  // root port, switch downstream, PCI->PCIe bridge
};

// PCIe link speed code (LnkCap/LnkSta bits 3:0) to GT/s; nullopt when unknown.
std::optional<double> speed_code_to_gts(unsigned code);
// Fraction of the raw bit rate left after line encoding: 8b/10b up to 5 GT/s,
// 128b/130b for 8-32 GT/s, FLIT mode (242/256) at 64 GT/s.
double encoding_efficiency(double speed_gts);
// Theoretical one-direction payload-free rate of a link, in GB/s.
double link_rate_gbps(double speed_gts, int width);
// "2.5GT/s", "8GT/s", "32GT/s": the spelling lspci uses.
std::string speed_label(double speed_gts);
// Max_Payload_Size / Max_Read_Request_Size encoding (128 << n), nullopt for reserved codes.
std::optional<int> size_code_to_bytes(unsigned code);

}  // namespace ringserve::preflight
