// Linux CPU lists ("0-15,32-47") and hex masks ("ffff,00000000"), as sysfs
// local_cpulist and /proc/irq/N/smp_affinity(_list) print them.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "ringserve/common/expected.h"

namespace ringserve::preflight {

inline constexpr int kMaxCpus = 8192;

Expected<std::set<int>> parse_cpulist(std::string_view text);
Expected<std::set<int>> parse_cpumask(std::string_view text);
std::string format_cpulist(const std::set<int>& cpus);

}  // namespace ringserve::preflight
