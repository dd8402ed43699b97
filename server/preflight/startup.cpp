#include "preflight/startup.h"

#include <map>

#include "preflight/apply.h"
#include "util/log.h"

namespace ringserve::preflight {

void add_startup_flags(CLI::App& app, StartupOptions& options) {
  static const std::map<std::string, StartupMode> kModes = {
      {"off", StartupMode::kOff}, {"report", StartupMode::kReport}, {"apply", StartupMode::kApply}};
  options.report.bandwidth_probe = false;  // start-up stays fast; `ringserve preflight` probes
  app.add_option("--preflight", options.mode,
                 "PCIe preflight at start: off, report (log a verdict) or apply (also A1-A3, "
                 "journaled; refused in a VM)")
      ->transform(CLI::CheckedTransformer(kModes, CLI::ignore_case))
      ->capture_default_str();
}

Expected<StartupResult> run_at_startup(const StartupOptions& options) {
  auto log = ringserve::log::get("pcie");
  if (options.mode == StartupMode::kOff) return StartupResult{"preflight off", 0};
  // A host without a readable PCI tree (a container, say) must still be able
  // to serve: the preflight then says why it could not look.
  auto ran = run_report(options.report);
  if (!ran) {
    StartupResult skipped{"preflight could not run: " + ran.error().message, 0};
    log->warn("{}", skipped.verdict);
    return skipped;
  }
  Report& report = *ran;
  StartupResult result{verdict(report), exit_status(report)};
  if (report.worst() >= Severity::kWarn) {
    log->warn("{}", result.verdict);
  } else {
    log->info("{}", result.verdict);
  }
  if (options.mode == StartupMode::kApply) {
    auto actions = RS_TRY(parse_actions(options.apply_actions));
    ApplyOptions apply;
    apply.sysfs_root = options.report.sysfs_root;
    apply.proc_root = options.report.proc_root;
    if (!options.journal.empty()) apply.journal = options.journal;
    auto results = apply_actions(report, actions, apply);
    if (!results) {
      log->warn("preflight apply: {}", results.error().message);
    } else {
      for (const auto& r : *results) {
        log->info("preflight apply {} {}: {} {}", r.action, r.subject, r.outcome, r.message);
      }
    }
  }
  return result;
}

}  // namespace ringserve::preflight
