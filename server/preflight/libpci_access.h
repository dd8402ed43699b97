// The one place that talks to libpci (pciutils). Two methods:
//  * linux_sysfs over a configurable sysfs root (tests point it at a fake
//    tree of plain files), with the parent links libpci derives from sysfs;
//  * dump, for `lspci -x` files. The file is first read by our own parser
//    (dump_parser.h), which rejects what libpci would treat as fatal, and
//    libpci then reads the normalised copy.
// libpci reports fatal problems through a callback that must not return; we
// install one that longjmps back and turns the message into an Error, so no
// input can make the process exit.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "preflight/config_decoder.h"
#include "preflight/dump_parser.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

struct PciFunction {
  std::string bdf;
  std::vector<uint8_t> bytes;  // config bytes as read; `known` marks the readable ones
  std::vector<uint8_t> known;
  std::optional<std::string> parent_bdf;  // sysfs only: the upstream bridge
  bool parent_known = false;              // libpci could tell (sysfs): no parent = root bus
  ConfigBytes config() const { return ConfigBytes(bytes, known); }
};

// Every function under <sysfs_root>/bus/pci/devices, with as much config
// space as this process may read (64 bytes unprivileged, 256/4096 as root).
Expected<std::vector<PciFunction>> libpci_scan_sysfs(const std::string& sysfs_root);

// The devices of a parsed dump, read back through libpci's dump method; the
// `known` mask comes from the dump (libpci itself fills gaps with 0xFF).
Expected<std::vector<PciFunction>> libpci_read_dump(const DumpFile& dump);

}  // namespace ringserve::preflight
