// What procfs says, under a configurable root: the kernel command line, the
// io_uring sysctl, whether irqbalance runs, the boot id (journal entries are
// only undone within the boot that made them), a hypervisor CPU flag, and
// the affinity of IRQs.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ringserve::preflight {

struct ProcSystem {
  std::vector<std::string> cmdline;  // split on whitespace
  std::optional<int> io_uring_disabled;
  std::vector<int> irqbalance_pids;
  std::optional<std::string> boot_id;
  bool hypervisor_flag = false;  // "hypervisor" in /proc/cpuinfo flags
};

ProcSystem read_proc_system(const std::filesystem::path& proc_root);

struct IrqAffinity {
  int irq = 0;
  std::optional<std::string> affinity_list;            // smp_affinity_list
  std::optional<std::string> effective_affinity_list;  // where it actually fires
};

IrqAffinity read_irq_affinity(const std::filesystem::path& proc_root, int irq);

// The value of `key=` on the command line (last one wins, as in the
// kernel), or nullopt when absent.
std::optional<std::string> cmdline_value(const std::vector<std::string>& cmdline,
                                         std::string_view key);

}  // namespace ringserve::preflight
