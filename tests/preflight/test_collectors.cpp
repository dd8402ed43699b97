// Collectors against fake sysfs/procfs trees: link attributes present or
// absent, 64-byte unprivileged config vs 4 KiB, old and new speed strings,
// msi_irqs as files and as directories, kernel options.
#include <gtest/gtest.h>

#include "fake_host.h"
#include "preflight/host_files.h"
#include "preflight/procfs_collector.h"
#include "preflight/report.h"
#include "preflight/sysfs_collector.h"

namespace ringserve::preflight {
namespace {

using testing::FakeHost;
using testing::fixture_config;

constexpr const char* kLaptop = "gp108m-mx150-lenovo-laptop-hexdump-1.txt";

Options live(const FakeHost& host) {
  Options o;
  o.sysfs_root = host.sys();
  o.proc_root = host.proc();
  o.bandwidth_probe = false;
  o.nvml = false;
  return o;
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const auto& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// Root port 00:1c.0 and the MX150 at 02:00.0, as in the fixture.
void add_laptop(FakeHost& host, size_t gpu_config_bytes = 4096) {
  host.add_device("0000:00:1c.0", "", fixture_config(kLaptop, "0000:00:1c.0"));
  host.add_device("0000:02:00.0", "0000:00:1c.0",
                  fixture_config(kLaptop, "0000:02:00.0", gpu_config_bytes));
}

TEST(PreflightCollectors, SpeedStringsOldAndNew) {
  EXPECT_EQ(parse_link_speed("8 GT/s"), 8.0);
  EXPECT_EQ(parse_link_speed("16.0 GT/s"), 16.0);
  EXPECT_EQ(parse_link_speed("32.0 GT/s PCIe"), 32.0);
  EXPECT_EQ(parse_link_speed("2.5 GT/s PCIe"), 2.5);
  EXPECT_FALSE(parse_link_speed("Unknown").has_value());
  EXPECT_FALSE(parse_link_speed("").has_value());
  EXPECT_FALSE(parse_link_speed("nan GT/s").has_value());
}

TEST(PreflightCollectors, FullConfigOnBareMetal) {
  FakeHost host;
  add_laptop(host);
  host.add_gpu_attributes("0000:02:00.0", {120, 121});
  auto report = run_report(live(host));
  ASSERT_TRUE(report) << report.error().to_string();
  ASSERT_EQ(report->devices.size(), 1u);
  const auto& d = report->devices[0];
  EXPECT_EQ(d.gpu.bdf, "0000:02:00.0");
  EXPECT_EQ(d.gpu.config_bytes_known, 4096u);
  ASSERT_EQ(d.upstream.size(), 1u);
  EXPECT_EQ(d.upstream[0].bdf, "0000:00:1c.0");
  EXPECT_EQ(d.environment, Environment::kBareMetal);
  EXPECT_EQ(d.gpu.mrrs, 512);
  EXPECT_EQ(d.gpu.link.speed_gts, 8.0);
  ASSERT_TRUE(d.sysfs);
  EXPECT_EQ(d.sysfs->msi_irqs, (std::vector<int>{120, 121}));
  EXPECT_EQ(d.sysfs->link_aspm.at("l1_aspm"), "1");
  // Vectors fire on CPU 6, the GPU's local CPUs are 0-3.
  ASSERT_NE(find(d.findings, "irq.locality"), nullptr);
  EXPECT_EQ(find(d.findings, "irq.locality")->severity, Severity::kWarn);
  EXPECT_EQ(find(d.findings, "power.runtime_pm")->severity, Severity::kInfo);
  EXPECT_EQ(find(d.findings, "topology")->severity, Severity::kOk);
  EXPECT_EQ(exit_status(*report), 1);
}

TEST(PreflightCollectors, UnprivilegedConfigFallsBackToSysfsLink) {
  FakeHost host;
  add_laptop(host, 64);
  host.add_gpu_attributes("0000:02:00.0", {120});
  host.write(host.device_dir("0000:02:00.0") / "current_link_speed", "2.5 GT/s\n");
  auto report = run_report(live(host));
  ASSERT_TRUE(report) << report.error().to_string();
  const auto& d = report->devices.at(0);
  EXPECT_EQ(d.gpu.config_bytes_known, 64u);
  EXPECT_FALSE(d.gpu.has_pcie);
  EXPECT_EQ(d.gpu.link.speed_gts, 2.5);  // from sysfs
  EXPECT_EQ(d.gpu.link.cap_speed_gts, 8.0);
  ASSERT_NE(find(d.findings, "pcie.config_access"), nullptr);
  EXPECT_EQ(find(d.findings, "pcie.aspm")->severity, Severity::kInfo);
  EXPECT_EQ(find(d.findings, "pcie.link")->severity, Severity::kInfo);
}

TEST(PreflightCollectors, LinkAttributesAbsent) {
  FakeHost host;
  add_laptop(host, 64);
  auto report = run_report(live(host));
  ASSERT_TRUE(report) << report.error().to_string();
  const auto& d = report->devices.at(0);
  EXPECT_FALSE(d.gpu.link.speed_gts.has_value());
  EXPECT_FALSE(d.sysfs->link_dir);
  EXPECT_EQ(find(d.findings, "pcie.link")->severity, Severity::kInfo);
}

TEST(PreflightCollectors, UnknownSpeedString) {
  FakeHost host;
  add_laptop(host, 64);
  host.add_gpu_attributes("0000:02:00.0", {});
  host.write(host.device_dir("0000:02:00.0") / "current_link_speed", "Unknown\n");
  auto dev = read_sysfs_device(host.sys(), "0000:02:00.0");
  EXPECT_FALSE(dev.current_link_speed_gts.has_value());
  EXPECT_FALSE(dev.notes.empty());
}

TEST(PreflightCollectors, MsiIrqsAsDirectories) {
  FakeHost host;
  add_laptop(host);
  host.add_gpu_attributes("0000:02:00.0", {42, 7, 300}, /*irq_dirs=*/true);
  auto dev = read_sysfs_device(host.sys(), "0000:02:00.0");
  EXPECT_EQ(dev.msi_irqs, (std::vector<int>{7, 42, 300}));
  EXPECT_EQ(dev.parent_bdf, "0000:00:1c.0");
}

TEST(PreflightCollectors, GpuOnRootBusIsVirtualized) {
  FakeHost host;
  host.add_device("0000:00:06.0", "",
                  fixture_config("h200-guest-hexdump.txt", "0000:00:06.0", 768));
  auto report = run_report(live(host));
  ASSERT_TRUE(report) << report.error().to_string();
  ASSERT_EQ(report->devices.size(), 1u);
  EXPECT_TRUE(report->devices[0].upstream.empty());
  EXPECT_EQ(report->environment, Environment::kVirtualized);
}

TEST(PreflightCollectors, KernelOptionsAndServices) {
  FakeHost host;
  add_laptop(host);
  host.write(host.proc() / "cmdline", "root=/dev/sda pcie_aspm=off swiotlb=force intel_iommu=on\n");
  host.write(host.proc() / "sys" / "kernel" / "io_uring_disabled", "2\n");
  host.write(host.proc() / "4242" / "comm", "irqbalance\n");
  host.write(host.sys() / "module" / "pcie_aspm" / "parameters" / "policy",
             "[default] performance powersave powersupersave\n");
  host.write(host.sys() / "class" / "iommu" / "dmar0" / "uevent", "");
  auto report = run_report(live(host));
  ASSERT_TRUE(report) << report.error().to_string();
  const auto& f = report->findings;
  ASSERT_NE(find(f, "kernel.pcie_aspm_off"), nullptr);
  EXPECT_NE(find(f, "kernel.pcie_aspm_off")->evidence.find("[default]"), std::string::npos);
  EXPECT_EQ(find(f, "kernel.swiotlb")->severity, Severity::kWarn);
  EXPECT_EQ(find(f, "kernel.io_uring")->severity, Severity::kWarn);
  EXPECT_EQ(find(f, "irq.irqbalance")->severity, Severity::kInfo);
  EXPECT_EQ(find(f, "kernel.iommu")->severity, Severity::kInfo);
  EXPECT_NE(find(f, "kernel.iommu")->evidence.find("intel_iommu=on"), std::string::npos);
}

TEST(PreflightCollectors, IoUringRestrictedIsInfo) {
  FakeHost host;
  add_laptop(host);
  host.write(host.proc() / "sys" / "kernel" / "io_uring_disabled", "1\n");
  auto report = run_report(live(host));
  ASSERT_TRUE(report);
  EXPECT_EQ(find(report->findings, "kernel.io_uring")->severity, Severity::kInfo);
}

TEST(PreflightCollectors, NoPciTreeIsAnError) {
  ringserve::testing::TempDir empty;
  Options o;
  o.sysfs_root = empty.path();
  o.proc_root = empty.path();
  auto report = run_report(o);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, Errc::kNotFound);
}

TEST(PreflightCollectors, CmdlineValueLastWins) {
  EXPECT_EQ(cmdline_value({"a=1", "pcie_aspm=force", "pcie_aspm=off"}, "pcie_aspm"), "off");
  EXPECT_FALSE(cmdline_value({"pcie_aspm.policy=performance"}, "pcie_aspm").has_value());
}

}  // namespace
}  // namespace ringserve::preflight
