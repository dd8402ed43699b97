// `ringserve preflight`: judge the PCIe path to the GPU; with --apply,
// change what is safe to change (journaled), --rollback / --verify it, and
// --emit-persistence to generate udev/systemd files for a person to install.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "preflight/apply.h"
#include "preflight/persistence.h"
#include "preflight/render.h"
#include "preflight/report.h"

namespace ringserve::cli {
namespace {

namespace pf = ringserve::preflight;

struct PreflightArgs {
  pf::Options report;
  bool json = false;
  bool no_probe = false;
  bool no_nvml = false;
  size_t probe_mib = 256;
  std::string apply;
  bool allow_devctl = false;
  int mrrs = 512;
  std::string journal = pf::kDefaultJournalPath;
  bool rollback = false;
  bool verify = false;
  std::string emit_dir;
};

nlohmann::json results_json(const std::vector<pf::ActionResult>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) {
    out.push_back({{"action", r.action},
                   {"subject", r.subject},
                   {"target", r.target},
                   {"outcome", r.outcome},
                   {"message", r.message}});
  }
  return out;
}

// 0 when every result is fine, 1 for drift/skips, 2 for failures.
int results_status(const std::vector<pf::ActionResult>& results) {
  int status = 0;
  for (const auto& r : results) {
    if (r.outcome == "failed" || r.outcome == "reverted" || r.outcome == "rollback_failed") {
      status = 2;
    } else if ((r.outcome == "drift" || r.outcome == "skipped") && status < 1) {
      status = 1;
    }
  }
  return status;
}

void print_results(const char* what, const std::vector<pf::ActionResult>& results) {
  if (results.empty()) std::printf("%s: nothing to do\n", what);
  for (const auto& r : results) {
    std::printf("%s %-3s %-24s %-12s %s%s%s\n", what, r.action.c_str(), r.subject.c_str(),
                r.outcome.c_str(), r.message.c_str(), r.target.empty() ? "" : "  [",
                r.target.empty() ? "" : (r.target + "]").c_str());
  }
}

pf::ApplyOptions apply_options(const PreflightArgs& args) {
  pf::ApplyOptions o;
  o.sysfs_root = args.report.sysfs_root;
  o.proc_root = args.report.proc_root;
  o.journal = args.journal;
  o.allow_devctl = args.allow_devctl;
  o.mrrs_bytes = args.mrrs;
  return o;
}

int run_journal_command(const PreflightArgs& args) {
  auto results =
      args.rollback ? pf::rollback(apply_options(args)) : pf::verify(apply_options(args));
  const char* what = args.rollback ? "rollback" : "verify";
  if (!results) {
    std::fprintf(stderr, "ringserve preflight --%s: %s\n", what,
                 results.error().to_string().c_str());
    return 2;
  }
  if (args.json) {
    std::printf("%s\n", nlohmann::json{{"schema_version", pf::kReportSchemaVersion},
                                       {what, results_json(*results)}}
                            .dump(2)
                            .c_str());
  } else {
    print_results(what, *results);
  }
  return results_status(*results);
}

int run(PreflightArgs& args) {
  if (args.rollback || args.verify) return run_journal_command(args);
  std::vector<std::string> actions;
  if (!args.apply.empty()) {
    auto parsed = pf::parse_actions(args.apply);
    if (!parsed) {
      std::fprintf(stderr, "ringserve preflight: %s\n", parsed.error().message.c_str());
      return 2;
    }
    actions = *parsed;
  }
  args.report.bandwidth_probe = !args.no_probe;
  args.report.nvml = !args.no_nvml;
  args.report.probe_bytes = args.probe_mib << 20;
  auto report = pf::run_report(args.report);
  if (!report) {
    std::fprintf(stderr, "ringserve preflight: %s\n", report.error().to_string().c_str());
    return 2;
  }
  int status = pf::exit_status(*report);
  nlohmann::json json = args.json ? pf::render_json(*report) : nlohmann::json();
  if (!args.json) std::fputs(pf::render_table(*report, ::isatty(STDOUT_FILENO)).c_str(), stdout);

  if (!actions.empty()) {
    auto results = pf::apply_actions(*report, actions, apply_options(args));
    if (!results) {
      std::fprintf(stderr, "ringserve preflight: %s\n", results.error().message.c_str());
      if (args.json) json["apply"] = {{"refused", results.error().message}};
      status = 2;
    } else {
      if (args.json) {
        json["apply"] = results_json(*results);
      } else {
        print_results("apply", *results);
      }
      status = std::max(status, results_status(*results));
    }
  }
  if (!args.emit_dir.empty()) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    auto files = pf::emit_persistence(
        *report, actions.empty() ? std::vector<std::string>{"A1", "A2", "A3"} : actions,
        args.emit_dir, ec ? "/usr/local/bin/ringserve" : self.string(), args.mrrs);
    if (!files) {
      std::fprintf(stderr, "ringserve preflight: %s\n", files.error().to_string().c_str());
      status = 2;
    } else if (args.json) {
      nlohmann::json written = nlohmann::json::array();
      for (const auto& p : files->written) written.push_back(p.string());
      json["persistence"] = {{"written", written},
                             {"kernel_cmdline_suggestions", files->cmdline_suggestions}};
    } else {
      for (const auto& p : files->written) std::printf("wrote %s (not installed)\n", p.c_str());
      std::printf("kernel command-line suggestions (not applied; each is system-wide):\n");
      for (const auto& s : files->cmdline_suggestions) std::printf("  - %s\n", s.c_str());
    }
  }
  if (args.json) std::printf("%s\n", json.dump(2).c_str());
  return status;
}

}  // namespace

void add_preflight_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PreflightArgs>();
  auto* sub = app.add_subcommand(
      "preflight",
      "Check the PCIe path to the GPU (link, ASPM, MPS/MRRS, IRQs, kernel options); exit 0 ok, "
      "1 warnings, 2 failures");
  sub->add_flag("--json", args->json, "Print the report as JSON (schema-versioned)");
  sub->add_option("--sysfs-root", args->report.sysfs_root, "Root of sysfs")->capture_default_str();
  sub->add_option("--proc-root", args->report.proc_root, "Root of procfs")->capture_default_str();
  sub->add_option_function<std::string>(
      "--pci-dump", [args](const std::string& p) { args->report.pci_dump = p; },
      "Judge an `lspci -x`/`-xxxx` dump (or `lspci -vv` text) instead of this machine");
  sub->add_option("--device", args->report.devices,
                  "BDF of the function to judge (repeatable; default: every NVIDIA GPU)");
  sub->add_flag("--no-probe", args->no_probe, "Skip the CUDA bandwidth probe");
  sub->add_option("--probe-mib", args->probe_mib, "Bytes per probe copy, MiB")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  sub->add_flag("--no-nvml", args->no_nvml, "Do not load libnvidia-ml.so.1");
  sub->add_option("--min-bandwidth-fraction", args->report.min_bandwidth_fraction,
                  "Warn below this fraction of the link's theoretical rate")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--apply", args->apply,
                  "Change, journaled, as root on bare metal only: A1 ASPM off on the GPU link, "
                  "A2 pin GPU IRQs to local CPUs, A3 runtime PM on, A4 MRRS (with --allow-devctl)");
  sub->add_flag("--allow-devctl", args->allow_devctl,
                "Allow A4, a masked write of DevCtl's MRRS bits (never MPS)");
  sub->add_option("--mrrs", args->mrrs, "MRRS in bytes that A4 sets")
      ->check(CLI::IsMember({128, 256, 512, 1024, 2048, 4096}))
      ->capture_default_str();
  sub->add_option("--journal", args->journal, "Rollback journal (JSON lines)")
      ->capture_default_str();
  sub->add_flag("--rollback", args->rollback,
                "Undo this boot's journaled changes whose live value has not drifted");
  sub->add_flag("--verify", args->verify, "Compare journaled changes with live values");
  sub->add_option("--emit-persistence", args->emit_dir,
                  "Write a udev rule and a systemd unit into DIR (never installed) and print "
                  "kernel command-line suggestions");
  sub->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace ringserve::cli
