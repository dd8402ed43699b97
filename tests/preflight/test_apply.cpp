// --apply, --rollback and --verify against a writable fake tree: success,
// an unwritable target (EIO-like), a register whose write does not stick,
// drift, a boot-id change, the MRRS masked write, and refusal in a VM.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "fake_host.h"
#include "preflight/apply.h"
#include "preflight/config_decoder.h"
#include "preflight/journal.h"
#include "preflight/persistence.h"
#include "preflight/report.h"
#include "preflight/startup.h"
#include "support/test_support.h"

namespace ringserve::preflight {
namespace {

namespace fs = std::filesystem;
using ringserve::testing::read_file;
using testing::FakeHost;
using testing::fixture_config;

constexpr const char* kLaptop = "gp108m-mx150-lenovo-laptop-hexdump-1.txt";
constexpr const char* kGpu = "0000:02:00.0";

std::string trimmed(const fs::path& p) {
  std::string s = read_file(p);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// A hardware register that accepts a write and keeps its old value, as a
// virtualized DevCtl or a firmware-owned attribute does.
class NonStickyIo : public FileTargetIo {
 public:
  explicit NonStickyIo(std::string suffix) : suffix_(std::move(suffix)) {}
  Status write_text(const fs::path& path, std::string_view value) override {
    if (path.string().ends_with(suffix_)) {
      ++ignored;
      return ok();
    }
    return FileTargetIo::write_text(path, value);
  }
  Status write_u16(const fs::path& path, size_t offset, uint16_t value) override {
    if (path.string().ends_with(suffix_)) {
      ++ignored;
      return ok();
    }
    return FileTargetIo::write_u16(path, offset, value);
  }
  int ignored = 0;

 private:
  std::string suffix_;
};

class PreflightApply : public ::testing::Test {
 protected:
  void SetUp() override {
    host.add_device("0000:00:1c.0", "", fixture_config(kLaptop, "0000:00:1c.0"));
    host.add_device(kGpu, "0000:00:1c.0", fixture_config(kLaptop, kGpu));
    host.add_gpu_attributes(kGpu, {120, 121});
    options.sysfs_root = host.sys();
    options.proc_root = host.proc();
    options.journal = host.root() / "state" / "journal.jsonl";
    options.require_root = false;
  }

  Report report() {
    Options o;
    o.sysfs_root = host.sys();
    o.proc_root = host.proc();
    o.bandwidth_probe = false;
    o.nvml = false;
    auto r = run_report(o);
    EXPECT_TRUE(r) << r.error().to_string();
    return *r;
  }

  std::vector<ActionResult> apply(const std::vector<std::string>& actions) {
    auto r = apply_actions(report(), actions, options);
    EXPECT_TRUE(r) << r.error().to_string();
    return r ? *r : std::vector<ActionResult>{};
  }

  std::vector<JournalEntry> journal() {
    auto entries = Journal(options.journal).latest();
    EXPECT_TRUE(entries) << entries.error().to_string();
    return *entries;
  }

  fs::path gpu() const { return host.device_dir(kGpu); }

  FakeHost host;
  ApplyOptions options;
};

TEST_F(PreflightApply, AppliesJournalsAndRollsBack) {
  auto results = apply({"A1", "A2", "A3"});
  // A1: l1_aspm, l0s_aspm; A2: two IRQs; A3: power/control.
  ASSERT_EQ(results.size(), 5u);
  for (const auto& r : results) EXPECT_EQ(r.outcome, "applied") << r.target << ": " << r.message;
  EXPECT_EQ(trimmed(gpu() / "link" / "l1_aspm"), "0");
  EXPECT_EQ(trimmed(gpu() / "link" / "l0s_aspm"), "0");
  EXPECT_EQ(trimmed(gpu() / "power" / "control"), "on");
  EXPECT_EQ(trimmed(host.proc() / "irq" / "120" / "smp_affinity_list"), "0-3");

  auto entries = journal();
  ASSERT_EQ(entries.size(), 5u);
  for (const auto& e : entries) {
    EXPECT_EQ(e.state, "applied");
    EXPECT_EQ(e.boot_id, "11111111-2222-3333-4444-555555555555");
  }
  // Each change has a pending line before its applied line.
  auto all = Journal(options.journal).read_all();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 10u);
  EXPECT_EQ((*all)[0].state, "pending");

  auto verified = verify(options);
  ASSERT_TRUE(verified);
  for (const auto& r : *verified) EXPECT_EQ(r.outcome, "ok");

  auto undone = rollback(options);
  ASSERT_TRUE(undone) << undone.error().to_string();
  ASSERT_EQ(undone->size(), 5u);
  for (const auto& r : *undone) EXPECT_EQ(r.outcome, "rolled_back") << r.message;
  EXPECT_EQ(trimmed(gpu() / "link" / "l1_aspm"), "1");
  EXPECT_EQ(trimmed(gpu() / "power" / "control"), "auto");
  EXPECT_EQ(trimmed(host.proc() / "irq" / "121" / "smp_affinity_list"), "0-7");
  // A second rollback has nothing left to do.
  auto again = rollback(options);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());
}

TEST_F(PreflightApply, AlreadyRightIsUnchangedAndNotJournaled) {
  host.write(gpu() / "power" / "control", "on\n");
  auto results = apply({"A3"});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, "unchanged");
  EXPECT_TRUE(journal().empty());
}

TEST_F(PreflightApply, UnwritableTargetFailsAndIsJournaled) {
  // A directory where the attribute should be: open() for writing fails
  // (EISDIR), as a sysfs write refused by the kernel would (EIO/EPERM).
  fs::remove(host.proc() / "irq" / "121" / "smp_affinity_list");
  fs::create_directories(host.proc() / "irq" / "121" / "smp_affinity_list");
  auto results = apply({"A2"});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].outcome, "applied");
  EXPECT_EQ(results[1].outcome, "failed");
  EXPECT_FALSE(results[1].message.empty());
}

TEST_F(PreflightApply, WriteThatDoesNotStickIsUndone) {
  NonStickyIo io("power/control");
  options.io = &io;
  auto results = apply({"A3"});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, "reverted") << results[0].message;
  EXPECT_NE(results[0].message.find("does not keep"), std::string::npos);
  EXPECT_EQ(io.ignored, 2);  // the write and the undo
  EXPECT_EQ(trimmed(gpu() / "power" / "control"), "auto");
  auto entries = journal();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, "reverted");
  // Nothing for rollback to do: the entry was never applied.
  auto undone = rollback(options);
  ASSERT_TRUE(undone);
  EXPECT_TRUE(undone->empty());
}

TEST_F(PreflightApply, DriftIsLeftAlone) {
  apply({"A3"});
  host.write(gpu() / "power" / "control", "auto\n");  // someone else changed it back
  auto verified = verify(options);
  ASSERT_TRUE(verified);
  ASSERT_EQ(verified->size(), 1u);
  EXPECT_EQ((*verified)[0].outcome, "drift");
  host.write(gpu() / "power" / "control", "something-else\n");
  auto undone = rollback(options);
  ASSERT_TRUE(undone);
  ASSERT_EQ(undone->size(), 1u);
  EXPECT_EQ((*undone)[0].outcome, "drift");
  EXPECT_EQ(trimmed(gpu() / "power" / "control"), "something-else");
}

TEST_F(PreflightApply, OtherBootEntriesExpire) {
  apply({"A3"});
  host.set_boot_id("99999999-0000-0000-0000-000000000000");
  auto undone = rollback(options);
  ASSERT_TRUE(undone);
  ASSERT_EQ(undone->size(), 1u);
  EXPECT_EQ((*undone)[0].outcome, "expired");
  EXPECT_EQ(trimmed(gpu() / "power" / "control"), "on");  // not touched
  EXPECT_EQ(journal().at(0).state, "expired");
}

TEST_F(PreflightApply, MrrsNeedsAllowDevctlAndWritesOnlyItsBits) {
  auto refused = apply({"A4"});
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].outcome, "skipped");

  const auto before = read_file(gpu() / "config");
  const Report r = report();
  const size_t devctl = static_cast<size_t>(*r.devices[0].gpu.pcie_cap_offset) + 8;
  options.allow_devctl = true;
  options.mrrs_bytes = 1024;
  auto results = apply({"A4"});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, "applied") << results[0].message;
  const auto after = read_file(gpu() / "config");
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    if (i == devctl + 1) continue;
    EXPECT_EQ(before[i], after[i]) << "byte " << i;
  }
  const auto hi_before = static_cast<uint8_t>(before[devctl + 1]);
  const auto hi_after = static_cast<uint8_t>(after[devctl + 1]);
  EXPECT_EQ(hi_after & 0x70, 0x30);              // 1024 = code 3
  EXPECT_EQ(hi_after & 0x8f, hi_before & 0x8f);  // FLR, NoSnoop, AuxPwr... untouched
  EXPECT_EQ(report().devices[0].gpu.mrrs, 1024);
  EXPECT_EQ(report().devices[0].gpu.mps, r.devices[0].gpu.mps);  // MPS never written

  auto undone = rollback(options);
  ASSERT_TRUE(undone);
  ASSERT_EQ(undone->size(), 1u);
  EXPECT_EQ((*undone)[0].outcome, "rolled_back");
  EXPECT_EQ(read_file(gpu() / "config"), before);
}

TEST_F(PreflightApply, VirtualizedMrrsWriteIsReverted) {
  NonStickyIo io("config");
  options.io = &io;
  options.allow_devctl = true;
  options.mrrs_bytes = 2048;
  const auto before = read_file(gpu() / "config");
  auto results = apply({"A4"});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, "reverted");
  EXPECT_EQ(read_file(gpu() / "config"), before);
}

TEST_F(PreflightApply, NoAspmAttributesIsSkipped) {
  fs::remove_all(gpu() / "link");
  auto results = apply({"A1"});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, "skipped");
}

TEST_F(PreflightApply, MissingBootIdRefuses) {
  fs::remove(host.proc() / "sys" / "kernel" / "random" / "boot_id");
  auto r = apply_actions(report(), {"A3"}, options);
  ASSERT_FALSE(r);
}

TEST_F(PreflightApply, CorruptJournalIsAnError) {
  fs::create_directories(options.journal.parent_path());
  std::ofstream(options.journal) << "{\"id\":1}\nnot json\n";
  auto undone = rollback(options);
  ASSERT_FALSE(undone);
  EXPECT_EQ(undone.error().code, Errc::kCorruptData);
}

TEST(PreflightApplyRefusal, VirtualizedTreeIsRefused) {
  FakeHost host;
  host.add_device("0000:00:06.0", "",
                  fixture_config("h200-guest-hexdump.txt", "0000:00:06.0", 768));
  host.add_gpu_attributes("0000:00:06.0", {42});
  Options o;
  o.sysfs_root = host.sys();
  o.proc_root = host.proc();
  o.bandwidth_probe = false;
  o.nvml = false;
  auto report = run_report(o);
  ASSERT_TRUE(report);
  ApplyOptions a;
  a.sysfs_root = host.sys();
  a.proc_root = host.proc();
  a.journal = host.root() / "journal.jsonl";
  a.require_root = false;
  auto r = apply_actions(*report, {"A3"}, a);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kPermissionDenied);
  EXPECT_NE(r.error().message.find("virtualized"), std::string::npos);
  EXPECT_FALSE(fs::exists(a.journal));
  EXPECT_EQ(read_file(host.device_dir("0000:00:06.0") / "power" / "control"), "auto\n");
}

TEST_F(PreflightApply, EmitsPersistenceFilesOnlyIntoTheDirectory) {
  const auto dir = host.root() / "persist";
  auto files = emit_persistence(report(), {"A1", "A3", "A4"}, dir, "/opt/ringserve", 1024);
  ASSERT_TRUE(files) << files.error().to_string();
  ASSERT_EQ(files->written.size(), 2u);
  const std::string rules = read_file(dir / "99-ringserve-gpu.rules");
  EXPECT_NE(rules.find("KERNEL==\"0000:02:00.0\""), std::string::npos) << rules;
  EXPECT_NE(rules.find("ATTR{power/control}=\"on\""), std::string::npos);
  EXPECT_NE(rules.find("ATTR{link/l1_aspm}=\"0\""), std::string::npos);
  EXPECT_NE(rules.find("CAP_EXP+08.w=3000:7000"), std::string::npos);  // MRRS bits only
  const std::string unit = read_file(dir / "ringserve-preflight.service");
  EXPECT_NE(unit.find("ExecStart=/opt/ringserve preflight --no-probe --apply=A1,A3"),
            std::string::npos)
      << unit;
  EXPECT_NE(unit.find("ExecStop=/opt/ringserve preflight --no-probe --rollback"),
            std::string::npos);
  EXPECT_FALSE(files->cmdline_suggestions.empty());
  // Nothing changed on the (fake) system.
  EXPECT_EQ(trimmed(gpu() / "power" / "control"), "auto");
  EXPECT_FALSE(fs::exists(options.journal));
}

TEST_F(PreflightApply, StartupModes) {
  StartupOptions off;
  off.mode = StartupMode::kOff;
  auto r = run_at_startup(off);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->verdict, "preflight off");

  StartupOptions report_only;
  report_only.report.sysfs_root = host.sys();
  report_only.report.proc_root = host.proc();
  report_only.report.bandwidth_probe = false;
  report_only.report.nvml = false;
  auto rep = run_at_startup(report_only);
  ASSERT_TRUE(rep) << rep.error().to_string();
  EXPECT_NE(rep->verdict.find("0000:02:00.0"), std::string::npos) << rep->verdict;
  EXPECT_EQ(rep->exit_status, 1);  // irq.locality warns on this tree
  EXPECT_EQ(trimmed(gpu() / "power" / "control"), "auto");

  StartupOptions no_tree;
  no_tree.report.sysfs_root = host.root() / "nowhere";
  auto skipped = run_at_startup(no_tree);
  ASSERT_TRUE(skipped);
  EXPECT_NE(skipped->verdict.find("could not run"), std::string::npos);

  CLI::App app;
  StartupOptions parsed;
  add_startup_flags(app, parsed);
  EXPECT_EQ(parsed.mode, StartupMode::kReport);
  app.parse(std::vector<std::string>{"apply", "--preflight"});
  EXPECT_EQ(parsed.mode, StartupMode::kApply);
  EXPECT_THROW(app.parse(std::vector<std::string>{"sometimes", "--preflight"}), CLI::ParseError);
}

TEST(PreflightApplyParse, Actions) {
  auto ok = parse_actions("a1,A3,A1");
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, (std::vector<std::string>{"A1", "A3"}));
  EXPECT_FALSE(parse_actions("A5"));
  EXPECT_FALSE(parse_actions(""));
  EXPECT_FALSE(parse_actions("A1,,A2"));
}

}  // namespace
}  // namespace ringserve::preflight
