#include "preflight/port_view.h"

#include <cmath>

#include <fmt/format.h>

namespace ringserve::preflight {

const char* port_type_name(int type) {
  switch (type) {
    case 0:
      return "Endpoint";
    case 1:
      return "Legacy Endpoint";
    case 4:
      return "Root Port";
    case 5:
      return "Upstream Port";
    case 6:
      return "Downstream Port";
    case 7:
      return "PCI-Express to PCI/PCI-X Bridge";
    case 8:
      return "PCI/PCI-X to PCI-Express Bridge";
    case 9:
      return "Root Complex Integrated Endpoint";
    case 10:
      return "Root Complex Event Collector";
    default:
      return "Unknown type";
  }
}

std::string aspm_name(Aspm aspm) {
  if (aspm.l0s && aspm.l1) return "L0s L1";
  if (aspm.l0s) return "L0s";
  if (aspm.l1) return "L1";
  return "disabled";
}

std::string PortView::vendor_device() const {
  if (!vendor || !device) return "";
  return fmt::format("{:04x}:{:04x}", *vendor, *device);
}

bool PortView::is_nvidia_gpu() const {
  return vendor == 0x10de && class_code && ((*class_code >> 16) & 0xff) == 0x03;
}

bool PortView::is_downstream_facing() const {
  return port_type == static_cast<int>(PortType::kRootPort) ||
         port_type == static_cast<int>(PortType::kSwitchDownstream) ||
         port_type == static_cast<int>(PortType::kPciToPcieBridge);
}

std::optional<double> speed_code_to_gts(unsigned code) {
  switch (code) {
    case 1:
      return 2.5;
    case 2:
      return 5.0;
    case 3:
      return 8.0;
    case 4:
      return 16.0;
    case 5:
      return 32.0;
    case 6:
      return 64.0;
    default:
      return std::nullopt;
  }
}

double encoding_efficiency(double speed_gts) {
  if (speed_gts <= 5.0) return 8.0 / 10.0;
  if (speed_gts <= 32.0) return 128.0 / 130.0;
  return 242.0 / 256.0;
}

double link_rate_gbps(double speed_gts, int width) {
  return speed_gts * width * encoding_efficiency(speed_gts) / 8.0;
}

std::string speed_label(double speed_gts) {
  if (std::floor(speed_gts) == speed_gts) return fmt::format("{}GT/s", static_cast<int>(speed_gts));
  return fmt::format("{}GT/s", speed_gts);
}

std::optional<int> size_code_to_bytes(unsigned code) {
  if (code > 5) return std::nullopt;
  return 128 << code;
}

}  // namespace ringserve::preflight
