#include "preflight/sysfs_collector.h"

#include <algorithm>
#include <charconv>

#include "preflight/dump_parser.h"
#include "preflight/host_files.h"

namespace ringserve::preflight {
namespace fs = std::filesystem;
namespace {

std::optional<int> to_int(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc()) return std::nullopt;
  return v;
}

}  // namespace

SysfsDevice read_sysfs_device(const fs::path& sysfs_root, const std::string& bdf) {
  SysfsDevice dev;
  dev.dir = sysfs_root / "bus" / "pci" / "devices" / bdf;
  std::error_code ec;
  if (!fs::is_directory(dev.dir, ec)) return dev;
  dev.present = true;

  dev.current_link_speed_text = read_attr(dev.dir / "current_link_speed");
  dev.max_link_speed_text = read_attr(dev.dir / "max_link_speed");
  if (dev.current_link_speed_text) {
    dev.current_link_speed_gts = parse_link_speed(*dev.current_link_speed_text);
    if (!dev.current_link_speed_gts) {
      dev.notes.push_back("current_link_speed reads \"" + *dev.current_link_speed_text + "\"");
    }
  }
  if (dev.max_link_speed_text) dev.max_link_speed_gts = parse_link_speed(*dev.max_link_speed_text);
  dev.current_link_width = to_int(read_attr(dev.dir / "current_link_width"));
  dev.max_link_width = to_int(read_attr(dev.dir / "max_link_width"));
  dev.numa_node = to_int(read_attr(dev.dir / "numa_node"));
  dev.local_cpulist = read_attr(dev.dir / "local_cpulist");
  dev.power_control = read_attr(dev.dir / "power" / "control");
  dev.iommu_group = fs::exists(dev.dir / "iommu_group", ec);

  // One entry per vector, named by IRQ number: a file holding "msi"/"msix"
  // on current kernels, a directory with a `mode` file on old ones.
  if (fs::is_directory(dev.dir / "msi_irqs", ec)) {
    for (const auto& entry : fs::directory_iterator(dev.dir / "msi_irqs", ec)) {
      const std::string name = entry.path().filename().string();
      int irq = 0;
      auto [p, err] = std::from_chars(name.data(), name.data() + name.size(), irq);
      if (err == std::errc() && p == name.data() + name.size() && irq >= 0) {
        dev.msi_irqs.push_back(irq);
      }
    }
    std::sort(dev.msi_irqs.begin(), dev.msi_irqs.end());
  }

  dev.link_dir = fs::is_directory(dev.dir / "link", ec);
  if (dev.link_dir) {
    for (const char* name : {"l0s_aspm", "l1_aspm", "l1_1_aspm", "l1_2_aspm", "clkpm"}) {
      if (auto v = read_attr(dev.dir / "link" / name)) dev.link_aspm[name] = *v;
    }
  }

  // The parent directory of the canonical device path is either another
  // device ("0000:00:01.0") or the host bridge node ("pci0000:00").
  fs::path real = fs::weakly_canonical(dev.dir, ec);
  if (!ec) {
    const std::string parent = real.parent_path().filename().string();
    dev.parent_known = true;
    size_t consumed = 0;
    std::string parent_bdf = parse_bdf_prefix(parent, &consumed);
    if (!parent_bdf.empty() && consumed == parent.size()) dev.parent_bdf = parent_bdf;
  }
  return dev;
}

SysfsSystem read_sysfs_system(const fs::path& sysfs_root) {
  SysfsSystem sys;
  if (auto policy = read_attr(sysfs_root / "module" / "pcie_aspm" / "parameters" / "policy")) {
    size_t open = policy->find('['), close = policy->find(']');
    if (open != std::string::npos && close != std::string::npos && close > open) {
      sys.aspm_policy = policy->substr(open + 1, close - open - 1);
    }
  }
  std::error_code ec;
  if (fs::is_directory(sysfs_root / "class" / "iommu", ec)) {
    for (const auto& entry : fs::directory_iterator(sysfs_root / "class" / "iommu", ec)) {
      sys.iommus.push_back(entry.path().filename().string());
    }
    std::sort(sys.iommus.begin(), sys.iommus.end());
  }
  return sys;
}

}  // namespace ringserve::preflight
