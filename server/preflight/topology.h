// The path from a GPU up to its root port, and what that path says about
// where we run. sysfs gives parents directly; a dump has only bus numbers,
// so the parent is the bridge whose secondary..subordinate range holds the
// device's bus (the innermost one, when ranges nest).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "preflight/port_view.h"
#include "preflight/report.h"

namespace ringserve::preflight {

// `parents`: BDF -> parent BDF for functions whose parent is known (empty
// string = known to sit on a root bus). Functions not in the map use the
// bus-number walk. Returns indices into `all`, nearest first.
std::vector<size_t> upstream_path(const std::vector<PortView>& all, size_t device,
                                  const std::map<std::string, std::string>& parents);

// Bare metal needs a visible upstream port and no hypervisor flag. No
// upstream port on a root bus (bus 00), or the CPU's hypervisor flag, is a
// VM; an upstream port merely missing from a partial dump is "unknown".
Environment classify_environment(const PortView& gpu, const std::vector<PortView>& upstream,
                                 bool hypervisor_flag, std::string* reason);

}  // namespace ringserve::preflight
