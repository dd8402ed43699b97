// The preflight report and its entry point. run_report() only reads: it
// never writes a register, a sysfs attribute or a file (see apply.h for the
// opt-in changes).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "preflight/findings.h"
#include "preflight/port_view.h"
#include "preflight/procfs_collector.h"
#include "preflight/sysfs_collector.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

inline constexpr int kReportSchemaVersion = 1;

enum class Environment { kBareMetal, kVirtualized, kUnknown };
const char* environment_name(Environment e);  // "bare-metal", "virtualized", "unknown"

struct NvmlLink {
  std::optional<unsigned> gen_current, width_current;
  std::optional<unsigned> gen_max, width_max;  // "possible with this GPU and system"
  std::optional<unsigned> gpu_gen_max;         // what the GPU itself supports
  std::optional<unsigned> replay_counter;
  std::optional<int> pstate;  // 0 = P0
};

struct BandwidthResult {
  std::string device_name;
  size_t bytes = 0;
  int iterations = 0;
  double pinned_h2d_gbps = 0, pinned_d2h_gbps = 0;
  double pageable_h2d_gbps = 0, pageable_d2h_gbps = 0;
};

// The link as sysfs reported it while the probe's copies were in flight.
struct LoadSample {
  std::optional<double> speed_gts;
  std::optional<int> width;
};

struct DeviceReport {
  PortView gpu;
  std::vector<PortView> upstream;  // nearest port first, up to the root port
  std::optional<SysfsDevice> sysfs;
  std::vector<IrqAffinity> irqs;
  std::optional<NvmlLink> nvml;
  std::optional<BandwidthResult> bandwidth;
  std::optional<std::string> bandwidth_error;
  std::optional<LoadSample> under_load;
  Environment environment = Environment::kUnknown;
  std::string environment_reason;
  std::vector<Finding> findings;
};

struct Report {
  int schema_version = kReportSchemaVersion;
  std::string source;  // "sysfs:/sys" or "dump:<file>" or "text:<file>"
  Environment environment = Environment::kUnknown;
  std::vector<DeviceReport> devices;
  std::vector<Finding> findings;  // system-wide ones
  std::vector<std::string> notes;

  Severity worst() const;
};

struct Options {
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path proc_root = "/proc";
  std::optional<std::filesystem::path> pci_dump;  // `lspci -x` or `lspci -vv` text
  std::vector<std::string> devices;  // BDFs to judge; default: every NVIDIA display function
  bool bandwidth_probe = true;       // when built with CUDA and a device is present
  size_t probe_bytes = size_t{256} << 20;
  int probe_iterations = 4;
  bool nvml = true;
  double min_bandwidth_fraction = 0.5;  // of the link's theoretical rate
};

Expected<Report> run_report(const Options& options);

// 0 when nothing worse than info, 1 with warnings, 2 with failures.
int exit_status(const Report& report);

// "preflight: 1 GPU, virtualized, 0 fail, 1 warn, 4 info (pcie.aspm ...)"
std::string verdict(const Report& report);

}  // namespace ringserve::preflight
