// The decoder and the rules on every file in tests/fixtures/lspci, against
// values that pciutils' lspci printed for the same file (expected/*.json,
// made once by make_expected.py; lspci is not needed here).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "preflight/apply.h"
#include "preflight/config_decoder.h"
#include "preflight/dump_parser.h"
#include "preflight/libpci_access.h"
#include "preflight/report.h"
#include "preflight/rules.h"
#include "preflight/vv_parser.h"
#include "support/test_support.h"

namespace ringserve::preflight {
namespace {

namespace fs = std::filesystem;
using ringserve::testing::fixture_path;
using ringserve::testing::read_file;

std::vector<fs::path> expectation_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(RINGSERVE_PREFLIGHT_EXPECTED_DIR)) {
    if (e.path().extension() == ".json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Compares one device's decoded values with what lspci printed. `partial`
// allows a field to be missing (rows absent from the dump) but never wrong.
void expect_matches(const nlohmann::json& exp, const PortView& got, bool partial,
                    const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_EQ(exp.value("pcie", false), got.has_pcie);
  if (!got.has_pcie) return;
  auto check_num = [&](const char* key, auto value) {
    if (!exp.contains(key)) return;
    if (exp[key].is_null()) {
      EXPECT_FALSE(value.has_value()) << key;
      return;
    }
    if (partial && !value.has_value()) return;
    ASSERT_TRUE(value.has_value()) << key;
    EXPECT_DOUBLE_EQ(exp[key].get<double>(), static_cast<double>(*value)) << key;
  };
  auto check_str = [&](const char* key, std::optional<std::string> value) {
    if (!exp.contains(key) || exp[key].is_null()) return;
    if (partial && !value) return;
    ASSERT_TRUE(value.has_value()) << key;
    EXPECT_EQ(exp[key].get<std::string>(), *value) << key;
  };
  if (exp.contains("port_type") && got.port_type) {
    EXPECT_EQ(exp["port_type"].get<std::string>(), port_type_name(*got.port_type));
  }
  check_num("cap_speed_gts", got.link.cap_speed_gts);
  check_num("cap_width", got.link.cap_width);
  check_num("speed_gts", got.link.speed_gts);
  check_num("width", got.link.width);
  check_num("mps", got.mps);
  check_num("mps_cap", got.mps_cap);
  check_num("mrrs", got.mrrs);
  check_str("aspm", got.aspm ? std::optional(aspm_name(*got.aspm)) : std::nullopt);
  check_str("aspm_cap", got.aspm_cap ? std::optional(aspm_name(*got.aspm_cap)) : std::nullopt);
  if (exp.contains("speed_downgraded") && !(partial && !got.link.speed_gts)) {
    EXPECT_EQ(exp["speed_downgraded"].get<bool>(), got.link.speed_downgraded.value_or(false))
        << "speed_downgraded";
  }
  if (exp.contains("width_downgraded") && !(partial && !got.link.width)) {
    EXPECT_EQ(exp["width_downgraded"].get<bool>(), got.link.width_downgraded.value_or(false))
        << "width_downgraded";
  }
}

TEST(PreflightFixtures, EveryFixtureHasExpectations) {
  size_t fixtures = 0;
  for (const auto& e : fs::directory_iterator(fixture_path("lspci"))) {
    if (e.path().extension() != ".txt") continue;
    ++fixtures;
    auto json = fs::path(RINGSERVE_PREFLIGHT_EXPECTED_DIR) / (e.path().stem().string() + ".json");
    EXPECT_TRUE(fs::exists(json)) << json << " missing: run tests/preflight/make_expected.py";
  }
  EXPECT_GE(fixtures, 11u);
}

TEST(PreflightFixtures, DecodedValuesEqualLspci) {
  size_t devices_checked = 0;
  for (const auto& file : expectation_files()) {
    const auto exp = nlohmann::json::parse(read_file(file));
    const auto fixture = fixture_path("lspci/" + exp["fixture"].get<std::string>());
    const std::string text = read_file(fixture);
    SCOPED_TRACE(fixture.filename().string());
    if (exp["kind"] == "hexdump") {
      auto dump = parse_lspci_dump(text);
      ASSERT_TRUE(dump) << dump.error().to_string();
      // libpci's dump method must read back exactly what our parser read.
      auto via_libpci = libpci_read_dump(*dump);
      ASSERT_TRUE(via_libpci) << via_libpci.error().to_string();
      ASSERT_EQ(via_libpci->size(), dump->devices.size());
      std::map<std::string, const DumpDevice*> by_bdf;
      for (const auto& d : dump->devices) by_bdf[d.bdf] = &d;
      ASSERT_EQ(by_bdf.size(), exp["devices"].size());
      for (const auto& e : exp["devices"]) {
        const std::string bdf = e["bdf"];
        ASSERT_TRUE(by_bdf.count(bdf)) << bdf;
        auto view = decode_config(by_bdf[bdf]->config(), bdf);
        if (e["unreachable"].get<bool>()) {
          ASSERT_FALSE(view) << bdf;
          EXPECT_EQ(view.error().code, Errc::kUnavailable);
          continue;
        }
        ASSERT_TRUE(view) << view.error().to_string();
        const bool partial = !e["missing_rows"].empty();
        if (partial) {
          // lspci decodes missing rows as 0xFF; we must report them missing instead.
          EXPECT_FALSE(view->notes.empty()) << bdf;
        }
        expect_matches(e, *view, partial, bdf);
        ++devices_checked;
      }
    } else {
      auto vv = parse_lspci_vv(text);
      ASSERT_TRUE(vv) << vv.error().to_string();
      std::map<std::string, const PortView*> by_bdf;
      for (const auto& d : vv->devices) by_bdf[d.bdf] = &d;
      for (const auto& e : exp["devices"]) {
        const std::string bdf = e["bdf"];
        ASSERT_TRUE(by_bdf.count(bdf)) << bdf;
        expect_matches(e, *by_bdf[bdf], false, bdf);
        ++devices_checked;
      }
    }
  }
  EXPECT_GT(devices_checked, 250u);
}

// The gk106 dump lost its 0x80 row in the mail: lspci prints MPS 16384 and
// "Speed unknown" from the 0xFF fill; we leave those fields empty and say why.
TEST(PreflightFixtures, MissingRowIsReportedNotDecodedAsFF) {
  auto dump = parse_lspci_dump(
      read_file(fixture_path("lspci/gk106-gtx645oem-rk3399-asm1184e-hexdump-9.txt")));
  ASSERT_TRUE(dump);
  const DumpDevice* gpu = nullptr;
  for (const auto& d : dump->devices) {
    if (d.bdf == "0000:04:00.0") gpu = &d;
  }
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->missing_rows(), std::vector<size_t>{0x80});
  auto view = decode_config(gpu->config(), gpu->bdf);
  ASSERT_TRUE(view);
  EXPECT_TRUE(view->has_pcie);
  EXPECT_FALSE(view->mps.has_value());
  EXPECT_FALSE(view->link.speed_gts.has_value());
  EXPECT_EQ(view->mps_cap, 256);
}

Options dump_options(const std::string& fixture) {
  Options o;
  o.pci_dump = fixture_path("lspci/" + fixture);
  o.bandwidth_probe = false;
  o.nvml = false;
  return o;
}

const Finding* find(const DeviceReport& d, const std::string& id) {
  for (const auto& f : d.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

TEST(PreflightRules, RunsOnEveryFixture) {
  for (const auto& e : fs::directory_iterator(fixture_path("lspci"))) {
    if (e.path().extension() != ".txt") continue;
    SCOPED_TRACE(e.path().filename().string());
    auto report = run_report(dump_options(e.path().filename().string()));
    ASSERT_TRUE(report) << report.error().to_string();
    for (const auto& d : report->devices) {
      EXPECT_TRUE(d.gpu.is_nvidia_gpu());
      EXPECT_NE(find(d, "topology"), nullptr);
    }
    EXPECT_FALSE(verdict(*report).empty());
  }
}

TEST(PreflightRules, H200GuestIsVirtualizedAndApplyIsRefused) {
  auto report = run_report(dump_options("h200-guest-hexdump.txt"));
  ASSERT_TRUE(report) << report.error().to_string();
  ASSERT_EQ(report->devices.size(), 1u);
  const auto& d = report->devices[0];
  EXPECT_EQ(d.gpu.bdf, "0000:00:06.0");
  EXPECT_EQ(d.environment, Environment::kVirtualized);
  EXPECT_EQ(report->environment, Environment::kVirtualized);
  EXPECT_TRUE(d.upstream.empty());
  EXPECT_EQ(d.gpu.link.speed_gts, 32.0);
  EXPECT_EQ(d.gpu.link.width, 16);
  EXPECT_EQ(d.gpu.mps, 256);
  EXPECT_EQ(d.gpu.mrrs, 4096);
  EXPECT_EQ(d.gpu.link.equalization_complete, true);
  EXPECT_EQ(d.gpu.link.supported_speeds_gts, (std::vector<double>{2.5, 5, 8, 16, 32}));
  ASSERT_NE(find(d, "pcie.link"), nullptr);
  EXPECT_EQ(find(d, "pcie.link")->severity, Severity::kOk);
  EXPECT_EQ(find(d, "pcie.aspm")->severity, Severity::kOk);
  EXPECT_EQ(find(d, "topology")->severity, Severity::kInfo);
  EXPECT_EQ(exit_status(*report), 0);

  ApplyOptions apply;
  apply.require_root = false;
  auto refused = apply_actions(*report, {"A1"}, apply);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kPermissionDenied);
}

TEST(PreflightRules, RootPortAndGpuFromOneDump) {
  // gt218 on an X58 root port: the GPU's cap (2.5 GT/s) is below the port's
  // (5 GT/s), so 2.5 GT/s is the target; the bus walk finds 00:07.0.
  auto report = run_report(dump_options("gt218-geforce210-asus-p6t6-nf200-hexdump-2.txt"));
  ASSERT_TRUE(report);
  const DeviceReport* gpu = nullptr;
  for (const auto& d : report->devices) {
    if (d.gpu.bdf == "0000:06:00.0") gpu = &d;
  }
  ASSERT_NE(gpu, nullptr);
  ASSERT_FALSE(gpu->upstream.empty());
  EXPECT_EQ(gpu->upstream.front().bdf, "0000:00:07.0");
  EXPECT_EQ(gpu->environment, Environment::kBareMetal);
  EXPECT_EQ(find(*gpu, "pcie.link")->severity, Severity::kOk);
  EXPECT_EQ(find(*gpu, "pcie.mps")->severity, Severity::kOk);
}

TEST(PreflightRules, DowngradedAtIdleIsInfoWithoutLoad) {
  // TU116 in a Gen2 slot: target min(8, 5) = 5 GT/s, LnkSta 2.5 GT/s.
  auto report = run_report(dump_options("tu116-gtx1650super-p45-vv-2.txt"));
  ASSERT_TRUE(report);
  const DeviceReport* gpu = nullptr;
  for (const auto& d : report->devices) {
    if (d.gpu.bdf == "0000:01:00.0") gpu = &d;
  }
  ASSERT_NE(gpu, nullptr);
  ASSERT_FALSE(gpu->upstream.empty());
  EXPECT_EQ(gpu->upstream.front().bdf, "0000:00:01.0");
  const Finding* link = find(*gpu, "pcie.link");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->severity, Severity::kInfo);
  EXPECT_NE(link->evidence.find("target 5GT/s x16"), std::string::npos) << link->evidence;

  // The same state under load is a failure; full speed under load is info.
  DeviceReport loaded = *gpu;
  loaded.findings.clear();
  loaded.under_load = LoadSample{2.5, 16};
  std::vector<Finding> out;
  link_rules(loaded, RuleOptions{}, out);
  bool fail = false;
  for (const auto& f : out) fail = fail || (f.id == "pcie.link" && f.severity == Severity::kFail);
  EXPECT_TRUE(fail);
  loaded.under_load = LoadSample{5.0, 16};
  out.clear();
  link_rules(loaded, RuleOptions{}, out);
  for (const auto& f : out) {
    if (f.id == "pcie.link") {
      EXPECT_EQ(f.severity, Severity::kInfo);
    }
  }
}

TEST(PreflightRules, MpsMismatchAlongPathFails) {
  // Synthesised from the gp108m dump: the root port's MPS is lowered to 128
  // while the GPU keeps 256.
  auto dump =
      parse_lspci_dump(read_file(fixture_path("lspci/gp108m-mx150-lenovo-laptop-hexdump-1.txt")));
  ASSERT_TRUE(dump);
  for (auto& d : dump->devices) {
    if (d.bdf != "0000:00:1c.0") continue;
    auto view = decode_config(d.config(), d.bdf);
    ASSERT_TRUE(view && view->pcie_cap_offset);
    const size_t devctl = static_cast<size_t>(*view->pcie_cap_offset) + 8;
    d.bytes[devctl] &= static_cast<uint8_t>(~0xe0);  // MPS code 0 = 128
  }
  ringserve::testing::TempDir tmp;
  const auto path = tmp.path() / "mps.txt";
  std::ofstream(path) << to_lspci_dump(*dump);
  Options o;
  o.pci_dump = path;
  auto report = run_report(o);
  ASSERT_TRUE(report) << report.error().to_string();
  ASSERT_EQ(report->devices.size(), 1u);
  const Finding* mps = find(report->devices[0], "pcie.mps");
  ASSERT_NE(mps, nullptr);
  EXPECT_EQ(mps->severity, Severity::kFail);
  EXPECT_EQ(exit_status(*report), 2);
}

TEST(PreflightRules, AspmEnabledOnPortWarns) {
  // The Quadro's audio function has ASPM L0s L1 enabled; judged as the
  // selected device it must warn and offer A1.
  Options o = dump_options("gp107gl-quadro-p1000-hexdump-5.txt");
  o.devices = {"05:00.1"};
  auto report = run_report(o);
  ASSERT_TRUE(report) << report.error().to_string();
  ASSERT_EQ(report->devices.size(), 1u);
  const Finding* aspm = find(report->devices[0], "pcie.aspm");
  ASSERT_NE(aspm, nullptr);
  EXPECT_EQ(aspm->severity, Severity::kWarn);
  EXPECT_EQ(aspm->apply_id, "A1");
  EXPECT_EQ(report->devices[0].environment, Environment::kUnknown);
}

TEST(PreflightRules, WidthDowngradeOnLaptop) {
  auto report = run_report(dump_options("ga106m-rtx3060-laptop-asus-hexdump-4.txt"));
  ASSERT_TRUE(report);
  ASSERT_FALSE(report->devices.empty());
  const Finding* link = find(report->devices[0], "pcie.link");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->severity, Severity::kInfo);
  EXPECT_NE(link->evidence.find("x8"), std::string::npos);
}

TEST(PreflightRules, UnreachableGpuIsReported) {
  auto report = run_report(dump_options("gp107m-gtx1050-mobile-d3cold-rootport-hexdump-7.txt"));
  ASSERT_TRUE(report) << report.error().to_string();
  bool unreachable = false;
  for (const auto& f : report->findings) {
    unreachable = unreachable || (f.id == "pcie.unreachable" && f.subject == "0000:01:00.0");
  }
  EXPECT_TRUE(unreachable);
}

// Hostile and damaged inputs: a clear error or a partial report, never a crash.
TEST(PreflightDumpParser, HostileInputs) {
  EXPECT_EQ(parse_lspci_dump("").error().code, Errc::kNotFound);
  EXPECT_EQ(parse_lspci_dump("hello\nworld\n").error().code, Errc::kNotFound);
  EXPECT_EQ(parse_lspci_dump("00: de 10\n").error().code, Errc::kCorruptData);  // no device
  EXPECT_EQ(parse_lspci_dump("00:06.0 x\n00: de 1\n").error().code, Errc::kCorruptData);
  EXPECT_EQ(parse_lspci_dump("00:06.0 x\n00: de  10\n").error().code, Errc::kCorruptData);
  EXPECT_EQ(parse_lspci_dump("00:06.0 x\nfff: de 10\n").error().code, Errc::kCorruptData);
  EXPECT_EQ(parse_lspci_dump("00:06.0 x\n12345678: de\n").error().code, Errc::kCorruptData);
  EXPECT_EQ(parse_lspci_dump(std::string(5000, 'a')).error().code, Errc::kTooLarge);
  // Quoted and CRLF lines parse.
  auto quoted = parse_lspci_dump("> 00:06.0 x\r\n> 00: de 10 35 23\r\n");
  ASSERT_TRUE(quoted);
  EXPECT_EQ(quoted->devices[0].bytes[2], 0x35);
  // Only 4 bytes: the identifying header is incomplete.
  EXPECT_EQ(decode_config(quoted->devices[0].config(), "x").error().code, Errc::kCorruptData);
  // All-FF device.
  std::string ff = "01:00.0 x\n";
  for (int row = 0; row < 16; ++row) {
    ff += fmt::format("{:02x}:", row * 16);
    for (int i = 0; i < 16; ++i) ff += " ff";
    ff += "\n";
  }
  auto all_ff = parse_lspci_dump(ff);
  ASSERT_TRUE(all_ff);
  EXPECT_EQ(decode_config(all_ff->devices[0].config(), "x").error().code, Errc::kUnavailable);
}

TEST(PreflightDecoder, CapabilityLoopsAndGarbageTerminate) {
  std::vector<uint8_t> cfg(256, 0);
  cfg[0] = 0xde;
  cfg[1] = 0x10;
  cfg[6] = 0x10;  // capability list
  cfg[0x34] = 0x40;
  cfg[0x40] = 0x10;  // PCIe cap pointing to itself
  cfg[0x41] = 0x40;
  auto view = decode_config(ConfigBytes(cfg), "loop");
  ASSERT_TRUE(view);
  EXPECT_TRUE(view->has_pcie);
  // Truncated to the 64 unprivileged bytes: no capability, a note saying why.
  auto short_view = decode_config(ConfigBytes(std::span(cfg).first(64)), "short");
  ASSERT_TRUE(short_view);
  EXPECT_FALSE(short_view->has_pcie);
  EXPECT_FALSE(short_view->notes.empty());
}

TEST(PreflightVvParser, DamagedText) {
  EXPECT_EQ(parse_lspci_vv("nothing here").error().code, Errc::kNotFound);
  auto vv = parse_lspci_vv(
      "> 01:00.0 VGA compatible controller: NVIDIA Corporation X\n"
      ">\tCapabilities: [78] Express (v2) Legacy Endpoint, MSI 00\n"
      ">\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM L0s\n"
      ">  L1, Exit Latency L0s <512ns\n"
      ">\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width\n"
      "> x16 (ok)\n");
  ASSERT_TRUE(vv);
  ASSERT_EQ(vv->devices.size(), 1u);
  const auto& d = vv->devices[0];
  EXPECT_EQ(d.link.cap_speed_gts, 8.0);
  EXPECT_EQ(d.link.width, 16);
  EXPECT_EQ(d.link.speed_downgraded, true);
  EXPECT_EQ(d.link.width_downgraded, false);
  EXPECT_EQ(aspm_name(*d.aspm_cap), "L0s L1");
  EXPECT_FALSE(d.mps.has_value());  // no DevCtl row: missing, not guessed
}

}  // namespace
}  // namespace ringserve::preflight
