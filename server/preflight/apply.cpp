#include "preflight/apply.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "preflight/cpulist.h"
#include "preflight/host_files.h"
#include "preflight/procfs_collector.h"
#include "util/log.h"

namespace ringserve::preflight {
namespace {

constexpr const char* kToolVersion = "ringserve 0.1.0";
constexpr size_t kDevCtl = 0x08;
constexpr uint16_t kMrrsMask = 0x7000;

struct Context {
  const ApplyOptions& options;
  TargetIo& io;
  Journal journal;
  std::string boot_id;
  std::string host;
};

// Values are compared the way the kernel prints them back: CPU lists as
// sets ("0-3" == "0,1,2,3"), config registers under their mask.
std::optional<uint16_t> hex16(const std::string& s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size() || v > 0xffff) return std::nullopt;
  return static_cast<uint16_t>(v);
}

bool same_value(const JournalEntry& e, const std::string& a, const std::string& b) {
  if (e.kind == "config16") {
    auto va = hex16(a), vb = hex16(b);
    return va && vb && (*va & e.mask) == (*vb & e.mask);
  }
  if (e.target.find("smp_affinity_list") != std::string::npos) {
    auto sa = parse_cpulist(a), sb = parse_cpulist(b);
    return sa && sb && *sa == *sb;
  }
  return a == b;
}

Expected<std::string> read_value(Context& ctx, const JournalEntry& e) {
  if (e.kind == "config16") {
    uint16_t v = RS_TRY(ctx.io.read_u16(e.target, e.offset));
    return fmt::format("{:04x}", v);
  }
  return ctx.io.read_text(e.target);
}

// Writes `value`; for a config register, only the masked bits of `value`
// are merged into the register as it reads now.
Status write_value(Context& ctx, const JournalEntry& e, const std::string& value) {
  if (e.kind == "config16") {
    uint16_t live = RS_TRY(ctx.io.read_u16(e.target, e.offset));
    auto parsed = hex16(value);
    if (!parsed) return make_error(Errc::kCorruptData, "\"{}\" is not a 16-bit hex value", value);
    const uint16_t want = *parsed;
    uint16_t merged = static_cast<uint16_t>((live & ~e.mask) | (want & e.mask));
    return ctx.io.write_u16(e.target, e.offset, merged);
  }
  return ctx.io.write_text(e.target, value);
}

std::string new_id() {
  static std::atomic<unsigned> counter{0};
  return fmt::format("{}-{}-{}", utc_now(), ::getpid(), counter++);
}

// The protocol every action follows: read, journal, write, read back, undo
// on mismatch.
ActionResult change(Context& ctx, JournalEntry e, const std::string& new_value) {
  ActionResult r{e.action, e.bdf, e.target, "", ""};
  auto old = read_value(ctx, e);
  if (!old) {
    r.outcome = "failed";
    r.message = old.error().message;
    return r;
  }
  e.old_value = *old;
  e.new_value = new_value;
  if (same_value(e, *old, new_value)) {
    r.outcome = "unchanged";
    r.message = "already " + *old;
    return r;
  }
  e.id = new_id();
  e.ts = utc_now();
  e.boot_id = ctx.boot_id;
  e.host = ctx.host;
  e.tool_version = kToolVersion;
  e.state = "pending";
  if (auto st = ctx.journal.append(e); !st) {
    r.outcome = "failed";
    r.message = "not written, the journal failed: " + st.error().message;
    return r;
  }
  auto finish = [&](std::string state, std::string message) {
    e.state = state;
    e.message = message;
    e.ts = utc_now();
    if (auto st = ctx.journal.append(e); !st) message += "; journal: " + st.error().message;
    r.outcome = std::move(state);
    r.message = std::move(message);
    return r;
  };
  if (auto st = write_value(ctx, e, new_value); !st) {
    return finish("failed", st.error().message);
  }
  auto readback = read_value(ctx, e);
  e.readback = readback ? *readback : "";
  if (readback && same_value(e, *readback, new_value)) {
    return finish("applied", fmt::format("{} -> {}", *old, new_value));
  }
  // The write did not stick: put the old value back and say so.
  auto undo = write_value(ctx, e, *old);
  return finish("reverted",
                fmt::format("wrote {} but read back {}: the register does not keep our value "
                            "(virtualized or owned by firmware); old value {}{}",
                            new_value, readback ? *readback : readback.error().message, *old,
                            undo ? " restored" : " NOT restored: " + undo.error().message));
}

void action_a1(Context& ctx, const DeviceReport& d, std::vector<ActionResult>& out) {
  const auto dir = d.sysfs->dir / "link";
  bool any = false;
  for (const char* name : {"l1_aspm", "l0s_aspm"}) {
    std::error_code ec;
    if (!std::filesystem::exists(dir / name, ec)) continue;
    any = true;
    JournalEntry e;
    e.action = "A1";
    e.bdf = d.gpu.bdf;
    e.target = (dir / name).string();
    e.kind = "text";
    out.push_back(change(ctx, e, "0"));
  }
  if (!any) {
    out.push_back({"A1", d.gpu.bdf, dir.string(), "skipped",
                   "the kernel offers no link/l0s_aspm or l1_aspm here (it does not control "
                   "ASPM on this link, e.g. pcie_aspm=off or firmware kept control)"});
  }
}

void action_a2(Context& ctx, const DeviceReport& d, std::vector<ActionResult>& out) {
  if (!d.sysfs->local_cpulist) {
    out.push_back({"A2", d.gpu.bdf, "", "skipped", "no local_cpulist for this device"});
    return;
  }
  auto local = parse_cpulist(*d.sysfs->local_cpulist);
  if (!local || local->empty()) {
    out.push_back({"A2", d.gpu.bdf, "", "skipped", "local_cpulist is empty or unreadable"});
    return;
  }
  if (d.sysfs->msi_irqs.empty()) {
    out.push_back({"A2", d.gpu.bdf, "", "skipped", "the device has no MSI/MSI-X vectors"});
  }
  for (int irq : d.sysfs->msi_irqs) {
    JournalEntry e;
    e.action = "A2";
    e.bdf = d.gpu.bdf;
    e.target = (ctx.options.proc_root / "irq" / std::to_string(irq) / "smp_affinity_list").string();
    e.kind = "text";
    auto r = change(ctx, e, format_cpulist(*local));
    r.subject = fmt::format("{} irq {}", d.gpu.bdf, irq);
    if (r.outcome == "failed" && r.message.find("Input/output error") != std::string::npos) {
      r.message += " (the kernel manages this IRQ's affinity; it cannot be set from user space)";
    }
    out.push_back(std::move(r));
  }
}

void action_a3(Context& ctx, const DeviceReport& d, std::vector<ActionResult>& out) {
  JournalEntry e;
  e.action = "A3";
  e.bdf = d.gpu.bdf;
  e.target = (d.sysfs->dir / "power" / "control").string();
  e.kind = "text";
  out.push_back(change(ctx, e, "on"));
}

void action_a4(Context& ctx, const Report& report, const DeviceReport& d,
               std::vector<ActionResult>& out) {
  const std::string target = (d.sysfs->dir / "config").string();
  auto refuse = [&](std::string why) { out.push_back({"A4", d.gpu.bdf, target, "skipped", why}); };
  if (!ctx.options.allow_devctl) {
    return refuse("A4 writes a config register: it needs --allow-devctl as well");
  }
  if (!d.gpu.pcie_cap_offset) return refuse("no PCIe capability visible (run as root)");
  const int bytes = ctx.options.mrrs_bytes;
  int code = -1;
  for (int c = 0; c <= 5; ++c) {
    if ((128 << c) == bytes) code = c;
  }
  if (code < 0)
    return refuse(fmt::format("MRRS {} is not one of 128..4096 (a power of two)", bytes));
  (void)report;
  auto cmdline = read_proc_system(ctx.options.proc_root).cmdline;
  bool bus_perf = false;
  for (const auto& w : cmdline) bus_perf = bus_perf || w.find("pcie_bus_perf") != std::string::npos;
  if (bus_perf && d.gpu.mps && bytes > *d.gpu.mps) {
    return refuse(
        fmt::format("pci=pcie_bus_perf is set: the kernel keeps MRRS <= MPS ({})", *d.gpu.mps));
  }
  JournalEntry e;
  e.action = "A4";
  e.bdf = d.gpu.bdf;
  e.target = target;
  e.kind = "config16";
  e.offset = static_cast<size_t>(*d.gpu.pcie_cap_offset) + kDevCtl;
  e.mask = kMrrsMask;
  out.push_back(change(ctx, e, fmt::format("{:04x}", static_cast<unsigned>(code << 12))));
}

Expected<Context> make_context(const ApplyOptions& options, TargetIo& io) {
  auto boot_id = read_attr(options.proc_root / "sys" / "kernel" / "random" / "boot_id");
  if (!boot_id || boot_id->empty()) {
    return make_error(Errc::kUnavailable,
                      "{}/sys/kernel/random/boot_id is not readable: without "
                      "it the journal cannot tell this boot's changes from older ones",
                      options.proc_root.string());
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return Context{options, io, Journal(options.journal), *boot_id, host};
}

}  // namespace

Expected<std::vector<std::string>> parse_actions(std::string_view csv) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= csv.size()) {
    size_t comma = csv.find(',', pos);
    std::string id(csv.substr(pos, comma == std::string_view::npos ? comma : comma - pos));
    for (auto& c : id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (id != "A1" && id != "A2" && id != "A3" && id != "A4") {
      return make_error(Errc::kInvalidArgument,
                        "unknown action \"{}\" (A1 ASPM off, A2 IRQ affinity, A3 runtime PM on, "
                        "A4 MRRS)",
                        id);
    }
    bool dup = false;
    for (const auto& seen : out) dup = dup || seen == id;
    if (!dup) out.push_back(id);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

Expected<std::vector<ActionResult>> apply_actions(const Report& report,
                                                  const std::vector<std::string>& actions,
                                                  const ApplyOptions& options) {
  for (const auto& d : report.devices) {
    if (d.environment != Environment::kBareMetal) {
      return make_error(Errc::kPermissionDenied,
                        "--apply refused: {} is in a {} topology ({}). Report only: changes "
                        "here would not reach the physical link, or would make later reads lie",
                        d.gpu.bdf, environment_name(d.environment), d.environment_reason);
    }
  }
  if (report.source.rfind("sysfs:", 0) != 0) {
    return make_error(Errc::kPermissionDenied,
                      "--apply refused: it works on the live system only, not on a dump ({})",
                      report.source);
  }
  if (report.devices.empty()) return make_error(Errc::kNotFound, "--apply: no GPU to act on");
  if (options.require_root && ::geteuid() != 0) {
    return make_error(Errc::kPermissionDenied, "--apply needs root (it writes sysfs and procfs)");
  }
  FileTargetIo file_io;
  Context ctx = RS_TRY(make_context(options, options.io ? *options.io : file_io));
  auto log = ringserve::log::get("pcie");
  std::vector<ActionResult> out;
  for (const auto& d : report.devices) {
    if (!d.sysfs || !d.sysfs->present) continue;
    for (const auto& a : actions) {
      if (a == "A1") action_a1(ctx, d, out);
      if (a == "A2") action_a2(ctx, d, out);
      if (a == "A3") action_a3(ctx, d, out);
      if (a == "A4") action_a4(ctx, report, d, out);
    }
  }
  for (const auto& r : out) {
    log->info("apply {} {} {}: {} {}", r.action, r.subject, r.target, r.outcome, r.message);
  }
  return out;
}

Expected<std::vector<ActionResult>> rollback(const ApplyOptions& options) {
  FileTargetIo file_io;
  Context ctx = RS_TRY(make_context(options, options.io ? *options.io : file_io));
  if (options.require_root && ::geteuid() != 0) {
    return make_error(Errc::kPermissionDenied, "--rollback needs root");
  }
  auto entries = RS_TRY(ctx.journal.latest());
  std::vector<ActionResult> out;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    JournalEntry e = *it;
    if (e.state != "applied" && e.state != "pending") continue;
    ActionResult r{e.action, e.bdf, e.target, "", ""};
    if (e.boot_id != ctx.boot_id) {
      e.state = "expired";
      e.message = "made in another boot; the kernel does not keep it across a reboot";
      e.ts = utc_now();
      RS_TRY_STATUS(ctx.journal.append(e));
      r.outcome = "expired";
      r.message = e.message;
      out.push_back(r);
      continue;
    }
    auto live = read_value(ctx, e);
    if (!live) {
      r.outcome = "failed";
      r.message = live.error().message;
      out.push_back(r);
      continue;
    }
    if (e.state == "pending" && same_value(e, *live, e.old_value)) {
      e.state = "abandoned";
      e.message = "the write never happened";
      RS_TRY_STATUS(ctx.journal.append(e));
      continue;
    }
    if (!same_value(e, *live, e.new_value)) {
      r.outcome = "drift";
      r.message = fmt::format("live value {} is neither ours ({}) nor touched by us: left alone",
                              *live, e.new_value);
      out.push_back(r);
      continue;
    }
    auto st = write_value(ctx, e, e.old_value);
    auto readback = read_value(ctx, e);
    const bool restored = st && readback && same_value(e, *readback, e.old_value);
    e.state = restored ? "rolled_back" : "rollback_failed";
    e.readback = readback ? *readback : "";
    e.message = restored ? fmt::format("{} -> {}", *live, e.old_value)
                         : (st ? "read back " + e.readback : st.error().message);
    e.ts = utc_now();
    RS_TRY_STATUS(ctx.journal.append(e));
    r.outcome = e.state;
    r.message = e.message;
    out.push_back(r);
  }
  return out;
}

Expected<std::vector<ActionResult>> verify(const ApplyOptions& options) {
  FileTargetIo file_io;
  Context ctx = RS_TRY(make_context(options, options.io ? *options.io : file_io));
  auto entries = RS_TRY(ctx.journal.latest());
  std::vector<ActionResult> out;
  for (const auto& e : entries) {
    if (e.state != "applied") continue;
    ActionResult r{e.action, e.bdf, e.target, "", ""};
    if (e.boot_id != ctx.boot_id) {
      r.outcome = "expired";
      r.message = "applied in another boot";
    } else if (auto live = read_value(ctx, e); !live) {
      r.outcome = "failed";
      r.message = live.error().message;
    } else if (same_value(e, *live, e.new_value)) {
      r.outcome = "ok";
      r.message = "live value " + *live;
    } else {
      r.outcome = "drift";
      r.message = fmt::format(
          "live {} differs from applied {} (a reset, resume or another tool "
          "changed it)",
          *live, e.new_value);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace ringserve::preflight
