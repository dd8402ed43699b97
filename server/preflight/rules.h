// The checks. Each rule reads a DeviceReport (or the system facts) and adds
// findings; none does I/O, so tests feed them fixtures directly.
#pragma once

#include <vector>

#include "preflight/findings.h"
#include "preflight/procfs_collector.h"
#include "preflight/report.h"
#include "preflight/sysfs_collector.h"

namespace ringserve::preflight {

struct RuleOptions {
  double min_bandwidth_fraction = 0.5;
};

// rules_link.cpp: link speed/width against min(GPU cap, port cap), idle vs
// under load; ASPM; MPS along the path; MRRS; AER; config access; bandwidth.
void link_rules(const DeviceReport& device, const RuleOptions& options, std::vector<Finding>& out);

// rules_host.cpp: IRQ locality, runtime PM, virtualized topology.
void host_device_rules(const DeviceReport& device, const ProcSystem& proc,
                       std::vector<Finding>& out);

// rules_host.cpp: irqbalance, kernel command line (pcie_aspm=off, swiotlb,
// IOMMU), io_uring.
void system_rules(const ProcSystem& proc, const SysfsSystem& sysfs, std::vector<Finding>& out);

// The link target: min(GPU capability, nearest port capability).
struct LinkTarget {
  std::optional<double> speed_gts;
  std::optional<int> width;
  bool limited_by_port_speed = false;
  bool limited_by_port_width = false;
};
LinkTarget link_target(const PortView& gpu, const PortView* port);

}  // namespace ringserve::preflight
