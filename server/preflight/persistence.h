// --emit-persistence: writes a udev rule and a systemd unit for a person to
// review and install, and returns kernel command-line suggestions with
// their system-wide effects. It never installs anything and never touches
// the boot loader: the files only land in the directory given.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "preflight/report.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

struct PersistenceFiles {
  std::vector<std::filesystem::path> written;
  std::vector<std::string> cmdline_suggestions;  // "option: effect"
};

// `actions` are the --apply ids to persist (A1..A4); `ringserve_path` is the
// binary the unit runs.
Expected<PersistenceFiles> emit_persistence(const Report& report,
                                            const std::vector<std::string>& actions,
                                            const std::filesystem::path& dir,
                                            const std::string& ringserve_path, int mrrs_bytes);

}  // namespace ringserve::preflight
