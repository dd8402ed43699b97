// What `ringserve serve --preflight off|report|apply` uses: the CLI11 flag
// and one call that runs the preflight at start and logs a one-line verdict.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "preflight/report.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

enum class StartupMode { kOff, kReport, kApply };

struct StartupOptions {
  StartupMode mode = StartupMode::kReport;
  Options report;                          // roots, probe; the probe is off at start by default
  std::string apply_actions = "A1,A2,A3";  // what `apply` applies (never A4 at start)
  std::string journal;                     // empty: the default path
};

// Registers --preflight {off,report,apply} (default report) on `app`.
void add_startup_flags(CLI::App& app, StartupOptions& options);

struct StartupResult {
  std::string verdict;  // one line, also logged on the "pcie" logger
  int exit_status = 0;  // as `ringserve preflight` would exit
};

// kOff: returns at once with verdict "preflight off". A report that cannot
// be made (no PCI tree) is a logged verdict, not an error, so serving goes
// on. kApply: the report, then the actions (refused in a VM: logged). Errors
// only for a bad apply list.
Expected<StartupResult> run_at_startup(const StartupOptions& options);

}  // namespace ringserve::preflight
