#include "preflight/topology.h"

#include <fmt/format.h>

namespace ringserve::preflight {
namespace {

struct Address {
  unsigned domain = 0, bus = 0;
};

std::optional<Address> address_of(const std::string& bdf) {
  Address a;
  unsigned dev = 0, fn = 0;
  if (std::sscanf(bdf.c_str(), "%x:%x:%x.%u", &a.domain, &a.bus, &dev, &fn) != 4) {
    return std::nullopt;
  }
  return a;
}

std::optional<size_t> bus_parent(const std::vector<PortView>& all, size_t device) {
  auto addr = address_of(all[device].bdf);
  if (!addr) return std::nullopt;
  std::optional<size_t> best;
  int best_span = 1 << 20;
  for (size_t i = 0; i < all.size(); ++i) {
    const PortView& p = all[i];
    if (i == device || !p.is_bridge || !p.secondary_bus || !p.subordinate_bus) continue;
    auto paddr = address_of(p.bdf);
    if (!paddr || paddr->domain != addr->domain) continue;
    if (*p.secondary_bus == 0 || addr->bus < *p.secondary_bus || addr->bus > *p.subordinate_bus) {
      continue;
    }
    // A bridge cannot sit below itself: its own bus must be outside its range.
    if (paddr->bus >= *p.secondary_bus && paddr->bus <= *p.subordinate_bus) continue;
    int span = *p.subordinate_bus - *p.secondary_bus;
    if (!best || span < best_span) {
      best = i;
      best_span = span;
    }
  }
  return best;
}

}  // namespace

std::vector<size_t> upstream_path(const std::vector<PortView>& all, size_t device,
                                  const std::map<std::string, std::string>& parents) {
  std::vector<size_t> path;
  size_t current = device;
  for (int depth = 0; depth < 32; ++depth) {
    std::optional<size_t> parent;
    auto it = parents.find(all[current].bdf);
    if (it != parents.end()) {
      if (it->second.empty()) break;
      for (size_t i = 0; i < all.size(); ++i) {
        if (all[i].bdf == it->second) parent = i;
      }
    } else {
      parent = bus_parent(all, current);
    }
    if (!parent) break;
    bool loop = *parent == device;
    for (size_t seen : path) loop = loop || seen == *parent;
    if (loop) break;
    path.push_back(*parent);
    current = *parent;
  }
  return path;
}

Environment classify_environment(const PortView& gpu, const std::vector<PortView>& upstream,
                                 bool hypervisor_flag, std::string* reason) {
  auto addr = address_of(gpu.bdf);
  if (upstream.empty()) {
    if ((addr && addr->bus == 0) || hypervisor_flag) {
      *reason = fmt::format(
          "{} sits on a root bus with no PCIe port above it{}: the physical link and its ports "
          "belong to a hypervisor",
          gpu.bdf, hypervisor_flag ? " and the CPU reports a hypervisor" : "");
      return Environment::kVirtualized;
    }
    *reason = fmt::format("no port above {} is in the data (a partial dump?)", gpu.bdf);
    return Environment::kUnknown;
  }
  if (hypervisor_flag) {
    *reason = "the CPU reports a hypervisor: the ports above the GPU are emulated";
    return Environment::kVirtualized;
  }
  *reason = fmt::format("{} is below {}", gpu.bdf, upstream.front().bdf);
  return Environment::kBareMetal;
}

}  // namespace ringserve::preflight
