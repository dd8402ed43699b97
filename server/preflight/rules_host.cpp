#include <fmt/format.h>

#include "preflight/cpulist.h"
#include "preflight/rules.h"

namespace ringserve::preflight {
namespace {

void check_irq_locality(const DeviceReport& d, std::vector<Finding>& out) {
  if (!d.sysfs || !d.sysfs->present) return;
  const SysfsDevice& s = *d.sysfs;
  if (s.msi_irqs.empty()) {
    out.push_back({"irq.locality", Severity::kInfo, d.gpu.bdf, "no msi_irqs entries",
                   "the driver has not allocated MSI/MSI-X vectors (driver not loaded?)", "", ""});
    return;
  }
  if (!s.local_cpulist) return;
  auto local = parse_cpulist(*s.local_cpulist);
  if (!local || local->empty()) return;
  std::vector<std::string> remote;
  for (const auto& irq : d.irqs) {
    const auto& text =
        irq.effective_affinity_list ? irq.effective_affinity_list : irq.affinity_list;
    if (!text) continue;
    auto cpus = parse_cpulist(*text);
    if (!cpus) continue;
    for (int cpu : *cpus) {
      if (!local->count(cpu)) {
        remote.push_back(fmt::format("{}->{}", irq.irq, *text));
        break;
      }
    }
  }
  const std::string evidence =
      fmt::format("{} vectors; local CPUs {}{}", s.msi_irqs.size(), *s.local_cpulist,
                  remote.empty() ? "" : "; off-node: " + fmt::format("{}", fmt::join(remote, " ")));
  if (remote.empty()) {
    out.push_back({"irq.locality", Severity::kOk, d.gpu.bdf, evidence,
                   "the GPU's interrupts fire on CPUs of its own NUMA node", "", ""});
    return;
  }
  out.push_back({"irq.locality", Severity::kWarn, d.gpu.bdf, evidence,
                 "completion interrupts handled on a remote NUMA node add cross-socket latency "
                 "to every wake-up of the engine thread",
                 "pin them with --apply=A2 (writes /proc/irq/N/smp_affinity_list; irqbalance, if "
                 "running, may move them back unless it bans these IRQs)",
                 "A2"});
}

void check_runtime_pm(const DeviceReport& d, std::vector<Finding>& out) {
  if (!d.sysfs || !d.sysfs->power_control) return;
  const std::string& v = *d.sysfs->power_control;
  if (v == "on") {
    out.push_back({"power.runtime_pm", Severity::kOk, d.gpu.bdf, "power/control = on",
                   "the kernel keeps the device out of runtime suspend", "", ""});
    return;
  }
  out.push_back({"power.runtime_pm", Severity::kInfo, d.gpu.bdf, "power/control = " + v,
                 "with `auto` the kernel may runtime-suspend an idle GPU; the first request "
                 "after idle then pays the resume",
                 "set it to `on` with --apply=A3", "A3"});
}

void check_topology(const DeviceReport& d, std::vector<Finding>& out) {
  if (d.environment == Environment::kBareMetal) {
    out.push_back({"topology", Severity::kOk, d.gpu.bdf, d.environment_reason,
                   "bare metal: the ports above the GPU are visible", "", ""});
    return;
  }
  out.push_back(
      {"topology", Severity::kInfo, d.gpu.bdf,
       fmt::format("{}: {}", environment_name(d.environment), d.environment_reason),
       d.environment == Environment::kVirtualized
           ? "in a VM the physical link, its ports, ASPM and MPS belong to the host; what the "
             "guest reads may be virtualized and writes may not reach the hardware"
           : "the ports above the GPU are not known, so the path cannot be judged",
       "report only: --apply is refused here; tune the host instead", ""});
}

}  // namespace

void host_device_rules(const DeviceReport& device, const ProcSystem& /*proc*/,
                       std::vector<Finding>& out) {
  check_topology(device, out);
  check_irq_locality(device, out);
  check_runtime_pm(device, out);
}

void system_rules(const ProcSystem& proc, const SysfsSystem& sysfs, std::vector<Finding>& out) {
  if (!proc.irqbalance_pids.empty()) {
    out.push_back({"irq.irqbalance", Severity::kInfo, "system",
                   fmt::format("irqbalance running (pid {})", proc.irqbalance_pids.front()),
                   "irqbalance periodically rewrites IRQ affinities, undoing a pinning by A2",
                   "ban the GPU's IRQs (irqbalance --banirq=N, or IRQBALANCE_BANNED_CPUS) if you "
                   "pin them",
                   ""});
  }
  if (auto aspm = cmdline_value(proc.cmdline, "pcie_aspm"); aspm && *aspm == "off") {
    out.push_back(
        {"kernel.pcie_aspm_off", Severity::kInfo, "system",
         fmt::format("pcie_aspm=off on the kernel command line{}",
                     sysfs.aspm_policy ? "; policy reads [" + *sysfs.aspm_policy + "]" : ""),
         "pcie_aspm=off makes the kernel leave ASPM alone: links the firmware put in "
         "L0s/L1 stay there, and the per-link ASPM attributes disappear",
         "use pcie_aspm.policy=performance instead to have the kernel turn ASPM off", ""});
  }
  if (auto swiotlb = cmdline_value(proc.cmdline, "swiotlb")) {
    const bool forced = swiotlb->find("force") != std::string::npos &&
                        swiotlb->find("noforce") == std::string::npos;
    out.push_back({"kernel.swiotlb", forced ? Severity::kWarn : Severity::kInfo, "system",
                   "swiotlb=" + *swiotlb,
                   forced ? "every DMA is bounced through the software IO TLB: each copy to the "
                            "GPU is copied twice"
                          : "swiotlb is configured but not forced; it bounces only DMA the "
                            "device cannot reach directly",
                   forced ? "remove swiotlb=force from the kernel command line (boot-time, "
                            "system-wide)"
                          : "",
                   ""});
  }
  {
    std::string mode;
    for (const char* key : {"iommu", "intel_iommu", "amd_iommu", "iommu.passthrough"}) {
      if (auto v = cmdline_value(proc.cmdline, key)) {
        mode += fmt::format("{}{}={}", mode.empty() ? "" : " ", key, *v);
      }
    }
    const bool passthrough = mode.find("iommu=pt") != std::string::npos ||
                             mode.find("passthrough=1") != std::string::npos;
    const std::string units = sysfs.iommus.empty()
                                  ? "no IOMMU registered"
                                  : fmt::format("{}", fmt::join(sysfs.iommus, ","));
    std::string evidence = fmt::format("{}; {}", mode.empty() ? "no iommu options" : mode, units);
    if (!sysfs.iommus.empty() && !passthrough) {
      out.push_back({"kernel.iommu", Severity::kInfo, "system", evidence,
                     "an IOMMU is active and DMA may be translated: each new mapping costs an "
                     "IOTLB miss; pinned buffers allocated once are fine",
                     "iommu=pt keeps translation for VMs only (kernel command line, system-wide)",
                     ""});
    } else {
      out.push_back({"kernel.iommu", Severity::kOk, "system", evidence,
                     passthrough ? "IOMMU in pass-through mode" : "no DMA translation", "", ""});
    }
  }
  if (proc.io_uring_disabled) {
    const int v = *proc.io_uring_disabled;
    Severity sev = v == 0 ? Severity::kOk : v == 1 ? Severity::kInfo : Severity::kWarn;
    out.push_back({"kernel.io_uring", sev, "system",
                   fmt::format("kernel.io_uring_disabled = {}", v),
                   v == 0   ? "io_uring is available to every process"
                   : v == 1 ? "io_uring is restricted to CAP_SYS_ADMIN or kernel.io_uring_group"
                            : "io_uring is disabled for every process",
                   v == 0 ? ""
                          : "ringserve falls back to blocking reads for model loading; "
                            "this is a host security setting and is not changed here",
                   ""});
  }
}

}  // namespace ringserve::preflight
