#include "preflight/procfs_collector.h"

#include <charconv>
#include <sstream>

#include "preflight/host_files.h"

namespace ringserve::preflight {
namespace fs = std::filesystem;

ProcSystem read_proc_system(const fs::path& proc_root) {
  ProcSystem sys;
  if (auto cmdline = read_attr(proc_root / "cmdline")) {
    std::istringstream in(*cmdline);
    std::string word;
    while (in >> word) sys.cmdline.push_back(word);
  }
  if (auto v = read_attr(proc_root / "sys" / "kernel" / "io_uring_disabled")) {
    int value = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), value);
    if (ec == std::errc()) sys.io_uring_disabled = value;
  }
  sys.boot_id = read_attr(proc_root / "sys" / "kernel" / "random" / "boot_id");
  if (auto cpuinfo = read_attr(proc_root / "cpuinfo")) {
    sys.hypervisor_flag = cpuinfo->find(" hypervisor") != std::string::npos;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc_root, ec)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    auto [p, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (err != std::errc() || p != name.data() + name.size()) continue;
    if (read_attr(entry.path() / "comm") == "irqbalance") sys.irqbalance_pids.push_back(pid);
  }
  return sys;
}

IrqAffinity read_irq_affinity(const fs::path& proc_root, int irq) {
  IrqAffinity a;
  a.irq = irq;
  const fs::path dir = proc_root / "irq" / std::to_string(irq);
  a.affinity_list = read_attr(dir / "smp_affinity_list");
  a.effective_affinity_list = read_attr(dir / "effective_affinity_list");
  return a;
}

std::optional<std::string> cmdline_value(const std::vector<std::string>& cmdline,
                                         std::string_view key) {
  std::optional<std::string> value;
  for (const auto& word : cmdline) {
    if (word.size() > key.size() && word.compare(0, key.size(), key) == 0 &&
        word[key.size()] == '=') {
      value = word.substr(key.size() + 1);
    }
  }
  return value;
}

}  // namespace ringserve::preflight
