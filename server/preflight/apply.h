// The opt-in changes (--apply), their rollback and verification.
//
//   A1  disable ASPM on the GPU's link: <dev>/link/l0s_aspm, l1_aspm := 0
//   A2  pin the GPU's MSI/MSI-X IRQs to its local CPUs: /proc/irq/N/smp_affinity_list
//   A3  keep the GPU out of runtime suspend: <dev>/power/control := on
//   A4  (needs allow_devctl) Max_Read_Request_Size only: DevCtl bits 14:12,
//       a masked read-modify-write of the config file; MPS is never written
//
// Each change: read the old value, journal it (fsync), write, read back; a
// read-back that differs is undone at once and reported (a register that a
// hypervisor or firmware does not let us change). Refused unless root, on a
// live sysfs (not a dump) and in a bare-metal topology.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/journal.h"
#include "preflight/report.h"
#include "preflight/target_io.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

struct ApplyOptions {
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path proc_root = "/proc";
  std::filesystem::path journal = kDefaultJournalPath;
  bool allow_devctl = false;  // A4 needs this as well as being named
  int mrrs_bytes = 512;       // A4's target
  bool require_root = true;   // tests on fake trees turn this off
  TargetIo* io = nullptr;     // nullptr: the real files
};

struct ActionResult {
  std::string action;   // "A1".., or "rollback"/"verify"
  std::string subject;  // BDF or IRQ
  std::string target;   // the file
  std::string outcome;  // applied, unchanged, skipped, failed, reverted, rolled_back, drift,
                        // expired, ok, rollback_failed
  std::string message;
};

// "A1,A3" -> {"A1","A3"}; unknown ids are kInvalidArgument.
Expected<std::vector<std::string>> parse_actions(std::string_view csv);

// kPermissionDenied: not root, or not bare metal, or a dump. Per-action
// failures are results, not errors, so one refused IRQ does not stop A3.
Expected<std::vector<ActionResult>> apply_actions(const Report& report,
                                                  const std::vector<std::string>& actions,
                                                  const ApplyOptions& options);

// Undoes this boot's applied entries, newest first, when the live value is
// still the one written (else "drift", left alone); other boots' entries
// are "expired" (the kernel forgot them at reboot).
Expected<std::vector<ActionResult>> rollback(const ApplyOptions& options);

// Compares this boot's applied entries with the live values.
Expected<std::vector<ActionResult>> verify(const ApplyOptions& options);

}  // namespace ringserve::preflight
