#include <algorithm>

#include <fmt/format.h>

#include "preflight/rules.h"

namespace ringserve::preflight {
namespace {

std::string link_text(std::optional<double> speed, std::optional<int> width) {
  return fmt::format("{} x{}", speed ? speed_label(*speed) : std::string("?GT/s"),
                     width ? std::to_string(*width) : std::string("?"));
}

void check_link(const DeviceReport& d, std::vector<Finding>& out) {
  const PortView& gpu = d.gpu;
  const PortView* port = d.upstream.empty() ? nullptr : &d.upstream.front();
  LinkTarget target = link_target(gpu, port);
  const auto& link = gpu.link;
  if (!link.speed_gts || !link.width || !target.speed_gts || !target.width) {
    out.push_back({"pcie.link", Severity::kInfo, gpu.bdf,
                   "link status or capability unknown: " + link_text(link.speed_gts, link.width),
                   "neither config space nor sysfs gave both the current and the maximum link",
                   "run as root, or on a kernel with current_link_speed in sysfs", ""});
    return;
  }
  const bool speed_low = *link.speed_gts < *target.speed_gts;
  const bool width_low = *link.width < *target.width;
  std::string limit;
  if (target.limited_by_port_speed || target.limited_by_port_width) {
    limit = fmt::format(" (the port {} allows {}; the GPU {})", port->bdf,
                        link_text(port->link.cap_speed_gts, port->link.cap_width),
                        link_text(gpu.link.cap_speed_gts, gpu.link.cap_width));
  }
  const std::string evidence =
      fmt::format("LnkSta {} vs target {}{}", link_text(link.speed_gts, link.width),
                  link_text(target.speed_gts, target.width), limit);
  if (!speed_low && !width_low) {
    out.push_back({"pcie.link", Severity::kOk, gpu.bdf, evidence,
                   "the link runs at the best speed and width both ends support", "", ""});
    return;
  }
  const std::string what = speed_low && width_low ? "speed and width"
                           : speed_low            ? "speed"
                                                  : "width";
  if (d.under_load && d.under_load->speed_gts && d.under_load->width) {
    const bool load_speed_low = *d.under_load->speed_gts < *target.speed_gts;
    const bool load_width_low = *d.under_load->width < *target.width;
    const std::string load =
        fmt::format("; under load {}", link_text(d.under_load->speed_gts, d.under_load->width));
    if (load_speed_low || load_width_low) {
      out.push_back({"pcie.link", Severity::kFail, gpu.bdf, evidence + load,
                     fmt::format("the link {} stays below what both ends support while the GPU "
                                 "is copying: every host<->GPU transfer is slower than it can be",
                                 what),
                     "check the slot (x16 electrical?), riser and BIOS PCIe generation setting "
                     "(the port's Target Link Speed); reseat the card",
                     ""});
    } else {
      out.push_back({"pcie.link", Severity::kInfo, gpu.bdf, evidence + load,
                     fmt::format("the link {} is lower only while idle: the GPU trains the link "
                                 "down to save power and back up under load",
                                 what),
                     "", ""});
    }
    return;
  }
  out.push_back({"pcie.link", Severity::kInfo, gpu.bdf,
                 evidence + " (idle; not measured under load)",
                 fmt::format("the link {} is below its target at idle; GPUs lower link speed when "
                             "idle, so only a reading under load can tell a fault",
                             what),
                 "run the preflight on a CUDA build so it can check the link during a copy", ""});
}

void check_aspm(const DeviceReport& d, std::vector<Finding>& out) {
  const PortView& gpu = d.gpu;
  const PortView* port = d.upstream.empty() ? nullptr : &d.upstream.front();
  if (!gpu.aspm) {
    out.push_back({"pcie.aspm", Severity::kInfo, gpu.bdf, "LnkCtl not readable",
                   "the ASPM state lives in the PCIe capability, beyond the 64 config bytes "
                   "an unprivileged process may read",
                   "run as root to check ASPM", ""});
    return;
  }
  std::string evidence = fmt::format("GPU LnkCtl ASPM {}", aspm_name(*gpu.aspm));
  bool enabled = gpu.aspm->any();
  if (port && port->aspm) {
    evidence += fmt::format(", port {} LnkCtl ASPM {}", port->bdf, aspm_name(*port->aspm));
    enabled = enabled || port->aspm->any();
  }
  if (!enabled) {
    out.push_back({"pcie.aspm", Severity::kOk, gpu.bdf, evidence,
                   "no low-power link state is enabled on the GPU's link", "", ""});
    return;
  }
  out.push_back({"pcie.aspm", Severity::kWarn, gpu.bdf, evidence,
                 "with ASPM on, the link drops into L0s/L1 between transfers and pays the exit "
                 "latency on the next one: small, frequent copies (token by token) suffer",
                 "disable ASPM on this link with --apply=A1 (the kernel's link/l1_aspm and "
                 "l0s_aspm attributes), or pcie_aspm.policy=performance on the kernel command line",
                 "A1"});
}

void check_mps(const DeviceReport& d, std::vector<Finding>& out) {
  const PortView& gpu = d.gpu;
  if (!gpu.mps) return;
  if (gpu.mps_cap && *gpu.mps > *gpu.mps_cap) {
    out.push_back({"pcie.mps", Severity::kFail, gpu.bdf,
                   fmt::format("DevCtl MaxPayload {} > DevCap {}", *gpu.mps, *gpu.mps_cap),
                   "a payload size above what the device supports makes malformed TLPs",
                   "find what wrote DevCtl (a setpci recipe?) and reboot; never set MPS by hand",
                   ""});
    return;
  }
  std::vector<std::string> mismatched;
  std::string evidence = fmt::format("GPU MPS {}", *gpu.mps);
  for (const auto& port : d.upstream) {
    if (!port.mps) continue;
    evidence += fmt::format(", {} MPS {}", port.bdf, *port.mps);
    if (*port.mps != *gpu.mps) mismatched.push_back(port.bdf);
  }
  if (mismatched.empty()) {
    out.push_back({"pcie.mps", Severity::kOk, gpu.bdf, evidence,
                   d.upstream.empty() ? "no upstream port visible to compare with"
                                      : "the payload size matches along the path",
                   "", ""});
    return;
  }
  out.push_back({"pcie.mps", Severity::kFail, gpu.bdf, evidence,
                 "every device on a path must use the same Max Payload Size; a larger payload "
                 "than a receiver's setting is a malformed TLP (AER errors, hangs)",
                 "let the kernel set MPS (pci=pcie_bus_safe or pcie_bus_perf on the command "
                 "line, a system-wide change); this tool never writes MPS",
                 ""});
}

void check_mrrs(const DeviceReport& d, std::vector<Finding>& out) {
  const PortView& gpu = d.gpu;
  if (!gpu.mrrs) return;
  const std::string evidence = fmt::format("DevCtl MaxReadReq {}", *gpu.mrrs);
  if (*gpu.mrrs >= 256) {
    out.push_back({"pcie.mrrs", Severity::kOk, gpu.bdf, evidence, "", "", ""});
    return;
  }
  out.push_back({"pcie.mrrs", Severity::kWarn, gpu.bdf, evidence,
                 "reads by the GPU from host memory are split into small requests, costing "
                 "bandwidth on device-initiated reads",
                 "raise MRRS with --apply=A4 --allow-devctl (MRRS bits only, journaled); the "
                 "firmware may have chosen it for fairness with other devices",
                 "A4"});
}

void check_aer(const DeviceReport& d, std::vector<Finding>& out) {
  const PortView& gpu = d.gpu;
  if (!gpu.aer_uncorrectable_status && !gpu.aer_correctable_status) return;
  const uint32_t uncor = gpu.aer_uncorrectable_status.value_or(0);
  const uint32_t cor = gpu.aer_correctable_status.value_or(0);
  const std::string evidence = fmt::format("AER UESta 0x{:08x}, CESta 0x{:08x}", uncor, cor);
  if (uncor == 0 && cor == 0) {
    out.push_back(
        {"pcie.aer", Severity::kOk, gpu.bdf, evidence, "no error status bits set", "", ""});
    return;
  }
  out.push_back({"pcie.aer", Severity::kWarn, gpu.bdf, evidence,
                 uncor ? "uncorrectable errors were logged on this link"
                       : "correctable errors (retries) were logged on this link: they cost "
                         "bandwidth and can mean a marginal slot or riser",
                 "watch the counters (nvidia-smi -q: Replays) and dmesg for AER messages", ""});
}

void check_config_access(const DeviceReport& d, std::vector<Finding>& out) {
  if (d.gpu.config_bytes_known == 0 || d.gpu.config_bytes_known > 64) return;
  out.push_back({"pcie.config_access", Severity::kInfo, d.gpu.bdf,
                 fmt::format("{} config bytes readable", d.gpu.config_bytes_known),
                 "unprivileged processes get only the first 64 bytes of config space, so "
                 "ASPM, MPS and MRRS cannot be checked",
                 "run `ringserve preflight` as root for the full report", ""});
}

void check_bandwidth(const DeviceReport& d, const RuleOptions& options, std::vector<Finding>& out) {
  if (!d.bandwidth) return;
  const auto& bw = *d.bandwidth;
  const auto& link = d.gpu.link;
  if (!link.speed_gts || !link.width) return;
  const double speed =
      d.under_load && d.under_load->speed_gts ? *d.under_load->speed_gts : *link.speed_gts;
  const int width = d.under_load && d.under_load->width ? *d.under_load->width : *link.width;
  const double theory = link_rate_gbps(speed, width);
  const double best = std::min(bw.pinned_h2d_gbps, bw.pinned_d2h_gbps);
  const std::string evidence = fmt::format(
      "pinned H2D {:.1f} GB/s, D2H {:.1f} GB/s; pageable H2D {:.1f}, D2H {:.1f}; link {} x{} "
      "= {:.1f} GB/s per direction before protocol overhead",
      bw.pinned_h2d_gbps, bw.pinned_d2h_gbps, bw.pageable_h2d_gbps, bw.pageable_d2h_gbps,
      speed_label(speed), width, theory);
  if (best >= options.min_bandwidth_fraction * theory) {
    out.push_back({"pcie.bandwidth", Severity::kOk, d.gpu.bdf, evidence,
                   "pinned copies reach a sound fraction of the link's rate (TLP headers and "
                   "flow control take roughly 10-15%)",
                   "", ""});
    return;
  }
  out.push_back({"pcie.bandwidth", Severity::kWarn, d.gpu.bdf, evidence,
                 fmt::format("pinned copies reach less than {:.0f}% of the link's theoretical "
                             "rate",
                             options.min_bandwidth_fraction * 100),
                 "look for IOMMU translation, swiotlb bouncing, a NUMA-remote buffer or a "
                 "shared upstream link",
                 ""});
}

}  // namespace

LinkTarget link_target(const PortView& gpu, const PortView* port) {
  LinkTarget t;
  t.speed_gts = gpu.link.cap_speed_gts;
  t.width = gpu.link.cap_width;
  if (port && port->link.cap_speed_gts && t.speed_gts && *port->link.cap_speed_gts < *t.speed_gts) {
    t.speed_gts = port->link.cap_speed_gts;
    t.limited_by_port_speed = true;
  }
  if (port && port->link.cap_width && t.width && *port->link.cap_width < *t.width) {
    t.width = port->link.cap_width;
    t.limited_by_port_width = true;
  }
  return t;
}

void link_rules(const DeviceReport& device, const RuleOptions& options, std::vector<Finding>& out) {
  check_config_access(device, out);
  if (device.gpu.has_link || !device.gpu.has_pcie) check_link(device, out);
  check_aspm(device, out);
  check_mps(device, out);
  check_mrrs(device, out);
  check_aer(device, out);
  check_bandwidth(device, options, out);
}

}  // namespace ringserve::preflight
