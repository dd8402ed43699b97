#include "preflight/report.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "preflight/bandwidth_probe.h"
#include "preflight/dump_parser.h"
#include "preflight/libpci_access.h"
#include "preflight/nvml.h"
#include "preflight/rules.h"
#include "preflight/topology.h"
#include "preflight/vv_parser.h"
#include "util/log.h"

namespace ringserve::preflight {
namespace {

struct Inventory {
  std::vector<PortView> views;
  std::map<std::string, std::string> parents;  // BDF -> parent BDF ("" = root bus)
  bool live = false;
};

Expected<std::string> read_dump_file(const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(Errc::kNotFound, "{}: {}", path.string(), ec.message());
  if (size > kMaxDumpBytes) {
    return make_error(Errc::kTooLarge, "{}: {} bytes, more than the {} accepted", path.string(),
                      size, kMaxDumpBytes);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::kIoError, "{}: cannot open", path.string());
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

void decode_functions(const std::vector<PciFunction>& functions, Report& report, Inventory& inv) {
  for (const auto& fn : functions) {
    auto view = decode_config(fn.config(), fn.bdf);
    if (!view) {
      const bool gone = view.error().code == Errc::kUnavailable;
      report.findings.push_back({"pcie.unreachable", gone ? Severity::kWarn : Severity::kInfo,
                                 fn.bdf, view.error().message,
                                 gone ? "a function that reads all-FF has dropped off the bus "
                                        "or is powered down; if it is the GPU, nothing can reach it"
                                      : "the config data is incomplete",
                                 "", ""});
      continue;
    }
    inv.views.push_back(std::move(*view));
    if (fn.parent_known) inv.parents[fn.bdf] = fn.parent_bdf.value_or("");
  }
}

Expected<Inventory> collect_inventory(const Options& options, Report& report) {
  Inventory inv;
  if (options.pci_dump) {
    const std::string text = RS_TRY(read_dump_file(*options.pci_dump));
    auto dump = parse_lspci_dump(text);
    if (dump) {
      report.source = "dump:" + options.pci_dump->string();
      for (auto& n : dump->notes) report.notes.push_back(n);
      auto functions = RS_TRY(libpci_read_dump(*dump));
      decode_functions(functions, report, inv);
      return inv;
    }
    if (dump.error().code != Errc::kNotFound) {
      return with_context(dump.error(), options.pci_dump->string());
    }
    auto vv = parse_lspci_vv(text);
    if (!vv) {
      return make_error(Errc::kCorruptData,
                        "{}: neither an `lspci -x` hex dump nor `lspci -vv` text ({})",
                        options.pci_dump->string(), vv.error().message);
    }
    report.source = "text:" + options.pci_dump->string();
    for (auto& n : vv->notes) report.notes.push_back(n);
    inv.views = std::move(vv->devices);
    return inv;
  }
  inv.live = true;
  report.source = "sysfs:" + options.sysfs_root.string();
  auto functions = RS_TRY(libpci_scan_sysfs(options.sysfs_root.string()));
  decode_functions(functions, report, inv);
  return inv;
}

// Fills what config space could not give (an unprivileged read stops at 64
// bytes) from the sysfs link attributes, which anyone may read.
void merge_sysfs_link(const SysfsDevice& s, PortView& view) {
  bool used = false;
  if (!view.link.speed_gts && s.current_link_speed_gts) {
    view.link.speed_gts = s.current_link_speed_gts;
    used = true;
  }
  if (!view.link.width && s.current_link_width) {
    view.link.width = s.current_link_width;
    used = true;
  }
  if (!view.link.cap_speed_gts && s.max_link_speed_gts) {
    view.link.cap_speed_gts = s.max_link_speed_gts;
    used = true;
  }
  if (!view.link.cap_width && s.max_link_width) {
    view.link.cap_width = s.max_link_width;
    used = true;
  }
  if (used) {
    view.has_link = true;
    view.notes.push_back("link values from sysfs (current_link_*/max_link_*)");
  }
}

bool selected(const Options& options, const PortView& view) {
  if (options.devices.empty()) return view.is_nvidia_gpu();
  for (const auto& want : options.devices) {
    if (view.bdf == want || view.bdf.substr(5) == want) return true;
  }
  return false;
}

void probe(const Options& options, DeviceReport& d) {
  ProbeOptions p;
  p.bdf = d.gpu.bdf;
  p.bytes = options.probe_bytes;
  p.iterations = options.probe_iterations;
  const auto dir = d.sysfs ? d.sysfs->dir : std::filesystem::path();
  LoadSample sample;
  p.during_load = [&] {
    if (dir.empty()) return;
    auto now = read_sysfs_device(options.sysfs_root, d.gpu.bdf);
    sample.speed_gts = now.current_link_speed_gts;
    sample.width = now.current_link_width;
  };
  auto result = run_bandwidth_probe(p);
  if (!result) {
    d.bandwidth_error = result.error().message;
    return;
  }
  d.bandwidth = *result;
  if (sample.speed_gts || sample.width) d.under_load = sample;
}

}  // namespace

const char* environment_name(Environment e) {
  switch (e) {
    case Environment::kBareMetal:
      return "bare-metal";
    case Environment::kVirtualized:
      return "virtualized";
    case Environment::kUnknown:
      return "unknown";
  }
  return "unknown";
}

Severity Report::worst() const {
  Severity s = worst_severity(findings);
  for (const auto& d : devices) s = std::max(s, worst_severity(d.findings));
  return s;
}

Expected<Report> run_report(const Options& options) {
  auto log = ringserve::log::get("pcie");
  Report report;
  Inventory inv = RS_TRY(collect_inventory(options, report));

  ProcSystem proc;
  SysfsSystem sysfs_sys;
  if (inv.live) {
    proc = read_proc_system(options.proc_root);
    sysfs_sys = read_sysfs_system(options.sysfs_root);
  }
  RuleOptions rule_options;
  rule_options.min_bandwidth_fraction = options.min_bandwidth_fraction;

  for (size_t i = 0; i < inv.views.size(); ++i) {
    if (!selected(options, inv.views[i])) continue;
    DeviceReport d;
    d.gpu = inv.views[i];
    for (size_t up : upstream_path(inv.views, i, inv.parents)) d.upstream.push_back(inv.views[up]);
    if (inv.live) {
      d.sysfs = read_sysfs_device(options.sysfs_root, d.gpu.bdf);
      merge_sysfs_link(*d.sysfs, d.gpu);
      for (auto& port : d.upstream) {
        merge_sysfs_link(read_sysfs_device(options.sysfs_root, port.bdf), port);
      }
      for (int irq : d.sysfs->msi_irqs) d.irqs.push_back(read_irq_affinity(options.proc_root, irq));
      if (options.nvml) {
        auto nvml = nvml_query_link(d.gpu.bdf);
        if (nvml) {
          d.nvml = *nvml;
        } else {
          log->debug("{}: NVML: {}", d.gpu.bdf, nvml.error().message);
        }
      }
      if (options.bandwidth_probe) probe(options, d);
    }
    d.environment =
        classify_environment(d.gpu, d.upstream, proc.hypervisor_flag, &d.environment_reason);
    link_rules(d, rule_options, d.findings);
    host_device_rules(d, proc, d.findings);
    if (d.bandwidth_error) {
      d.findings.push_back({"pcie.bandwidth", Severity::kInfo, d.gpu.bdf, *d.bandwidth_error,
                            "without a measured copy the link is judged from registers only", "",
                            ""});
    }
    report.devices.push_back(std::move(d));
  }

  if (inv.live) system_rules(proc, sysfs_sys, report.findings);
  if (report.devices.empty()) {
    report.findings.push_back({"gpu.none", Severity::kInfo, "system",
                               options.devices.empty() ? "no NVIDIA display-class function found"
                                                       : "none of the requested devices found",
                               "nothing to judge", "", ""});
    report.environment = proc.hypervisor_flag ? Environment::kVirtualized : Environment::kUnknown;
  } else {
    report.environment = Environment::kBareMetal;
    for (const auto& d : report.devices) {
      if (d.environment == Environment::kVirtualized) {
        report.environment = Environment::kVirtualized;
      } else if (d.environment == Environment::kUnknown &&
                 report.environment == Environment::kBareMetal) {
        report.environment = Environment::kUnknown;
      }
    }
  }
  return report;
}

int exit_status(const Report& report) {
  switch (report.worst()) {
    case Severity::kFail:
      return 2;
    case Severity::kWarn:
      return 1;
    default:
      return 0;
  }
}

std::string verdict(const Report& report) {
  int counts[4] = {0, 0, 0, 0};
  const Finding* worst = nullptr;
  auto visit = [&](const Finding& f) {
    counts[static_cast<int>(f.severity)]++;
    if (f.severity >= Severity::kWarn && (!worst || f.severity > worst->severity)) worst = &f;
  };
  for (const auto& f : report.findings) visit(f);
  for (const auto& d : report.devices) {
    for (const auto& f : d.findings) visit(f);
  }
  std::string gpus;
  for (const auto& d : report.devices) {
    gpus += fmt::format("{}{}", gpus.empty() ? "" : ",", d.gpu.bdf);
  }
  std::string out = fmt::format(
      "preflight {}: {} GPU{}{}{}, {}: {} fail, {} warn, {} info", severity_name(report.worst()),
      report.devices.size(), report.devices.size() == 1 ? "" : "s", gpus.empty() ? "" : " ", gpus,
      environment_name(report.environment), counts[3], counts[2], counts[1]);
  if (worst)
    out += fmt::format(" (worst: {} on {}: {})", worst->id, worst->subject, worst->evidence);
  return out;
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kOk:
      return "ok";
    case Severity::kInfo:
      return "info";
    case Severity::kWarn:
      return "warn";
    case Severity::kFail:
      return "fail";
  }
  return "?";
}

Severity worst_severity(const std::vector<Finding>& findings) {
  Severity s = Severity::kOk;
  for (const auto& f : findings) s = std::max(s, f.severity);
  return s;
}

}  // namespace ringserve::preflight
