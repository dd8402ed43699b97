// What sysfs says about one PCI function, under a configurable root so tests
// run against fake trees: link speed/width attributes (readable without
// root), NUMA locality, MSI/MSI-X vectors, runtime PM, the kernel's per-link
// ASPM attributes, the IOMMU group, and the parent device.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ringserve::preflight {

struct SysfsDevice {
  std::filesystem::path dir;  // <root>/bus/pci/devices/<bdf>
  bool present = false;

  std::optional<std::string> current_link_speed_text;
  std::optional<std::string> max_link_speed_text;
  std::optional<double> current_link_speed_gts;
  std::optional<double> max_link_speed_gts;
  std::optional<int> current_link_width;
  std::optional<int> max_link_width;

  std::optional<int> numa_node;
  std::optional<std::string> local_cpulist;
  std::vector<int> msi_irqs;                     // Linux IRQ numbers of the MSI/MSI-X vectors
  std::optional<std::string> power_control;      // "auto" or "on"
  bool link_dir = false;                         // <dev>/link exists
  std::map<std::string, std::string> link_aspm;  // l0s_aspm, l1_aspm, ...: "0"/"1"
  bool iommu_group = false;
  std::optional<std::string> parent_bdf;  // from the realpath of the device dir
  bool parent_known = false;
  std::vector<std::string> notes;
};

// Reads <sysfs_root>/bus/pci/devices/<bdf>; `present` is false when the
// directory does not exist.
SysfsDevice read_sysfs_device(const std::filesystem::path& sysfs_root, const std::string& bdf);

struct SysfsSystem {
  std::optional<std::string> aspm_policy;  // the bracketed word of pcie_aspm's policy
  std::vector<std::string> iommus;         // entries of /sys/class/iommu
};

SysfsSystem read_sysfs_system(const std::filesystem::path& sysfs_root);

}  // namespace ringserve::preflight
