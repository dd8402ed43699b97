#include "preflight/libpci_access.h"

#include <sys/mman.h>
#include <unistd.h>

#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

extern "C" {
#include <pci/pci.h>
}

#include "util/log.h"

namespace ringserve::preflight {
namespace {

// libpci's error callback is PCI_NONRET: it may only leave by longjmp. The
// jump lands in guarded(), whose frame holds nothing that needs a destructor
// run between setjmp and the libpci call.
thread_local std::jmp_buf* t_jump = nullptr;
thread_local char t_message[512];

// The GNU spelling, not [[noreturn]]: pci.h declares the hook with it, and
// clang makes it part of the function type the assignment must match.
__attribute__((noreturn)) void on_error(char* msg, ...) {
  va_list ap;
  va_start(ap, msg);
  std::vsnprintf(t_message, sizeof t_message, msg, ap);
  va_end(ap);
  std::longjmp(*t_jump, 1);
}

void on_warning(char* msg, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, msg);
  std::vsnprintf(buf, sizeof buf, msg, ap);
  va_end(ap);
  ringserve::log::get("pcie")->debug("libpci: {}", buf);
}

void on_debug(char*, ...) {}

// Runs fn(arg) with the longjmp handler armed; returns false (message in
// t_message) when libpci raised a fatal error.
template <class Fn>
bool guarded(Fn* fn, void* arg) {
  std::jmp_buf jump;
  std::jmp_buf* saved = t_jump;
  t_jump = &jump;
  if (setjmp(jump) != 0) {
    t_jump = saved;
    return false;
  }
  fn(arg);
  t_jump = saved;
  return true;
}

pci_access* new_access() {
  pci_access* a = pci_alloc();
  a->error = on_error;
  a->warning = on_warning;
  a->debug = on_debug;
  return a;
}

struct InitArgs {
  pci_access* a;
};
void do_init(void* p) {
  auto* args = static_cast<InitArgs*>(p);
  pci_init(args->a);
  pci_scan_bus(args->a);
}

struct ReadArgs {
  pci_dev* dev;
  uint8_t* buf;
  int offset;
  int len;
  int ok;
};
void do_read(void* p) {
  auto* r = static_cast<ReadArgs*>(p);
  r->ok = pci_read_block(r->dev, r->offset, r->buf, r->len);
}

struct FillArgs {
  pci_dev* dev;
  int known;
};
void do_fill(void* p) {
  auto* f = static_cast<FillArgs*>(p);
  f->known = pci_fill_info(f->dev, PCI_FILL_IDENT | PCI_FILL_PARENT);
}

std::string bdf_of(const pci_dev* d) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{}", d->domain, d->bus, d->dev, d->func);
}

// Reads in 64-byte chunks and stops at the first refused chunk: that is how
// far this process may read (sysfs hands unprivileged readers 64 bytes).
void read_config(pci_dev* dev, PciFunction& fn) {
  fn.bytes.assign(kConfigSpaceSize, 0xff);
  fn.known.assign(kConfigSpaceSize, 0);
  for (int off = 0; off < static_cast<int>(kConfigSpaceSize); off += 64) {
    ReadArgs r{dev, fn.bytes.data() + off, off, 64, 0};
    if (!guarded(do_read, &r) || !r.ok) break;
    std::memset(fn.known.data() + off, 1, 64);
  }
}

}  // namespace

Expected<std::vector<PciFunction>> libpci_scan_sysfs(const std::string& sysfs_root) {
  const std::string bus_path = (std::filesystem::path(sysfs_root) / "bus" / "pci").string();
  if (!std::filesystem::is_directory(std::filesystem::path(bus_path) / "devices")) {
    return make_error(Errc::kNotFound, "{}/devices: no PCI devices directory", bus_path);
  }
  pci_access* a = new_access();
  a->method = PCI_ACCESS_SYS_BUS_PCI;
  // IDs come from config space: the sysfs id/resource files are then not
  // needed, which keeps fake trees small and avoids libpci's fatal errors
  // when one of them is missing.
  a->buscentric = 1;
  pci_set_param(a, const_cast<char*>("sysfs.path"), const_cast<char*>(bus_path.c_str()));
  InitArgs init{a};
  if (!guarded(do_init, &init)) {
    // The access struct may be half-built: leaking it is safer than freeing.
    return make_error(Errc::kIoError, "libpci (sysfs at {}): {}", bus_path, t_message);
  }
  std::vector<PciFunction> out;
  for (pci_dev* d = a->devices; d; d = d->next) {
    PciFunction fn;
    fn.bdf = bdf_of(d);
    FillArgs fill{d, 0};
    if (guarded(do_fill, &fill) && (fill.known & PCI_FILL_PARENT)) {
      fn.parent_known = true;
      if (d->parent) fn.parent_bdf = bdf_of(d->parent);
    }
    read_config(d, fn);
    out.push_back(std::move(fn));
  }
  pci_cleanup(a);
  return out;
}

Expected<std::vector<PciFunction>> libpci_read_dump(const DumpFile& dump) {
  const std::string text = to_lspci_dump(dump);
  // libpci opens the dump by name; an anonymous memory file keeps the
  // normalised copy off the disk.
  int fd = memfd_create("ringserve-pci-dump", MFD_CLOEXEC);
  if (fd < 0) return make_error(Errc::kIoError, "memfd_create: {}", std::strerror(errno));
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n <= 0) {
      ::close(fd);
      return make_error(Errc::kIoError, "writing the dump copy: {}", std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  const std::string name = fmt::format("/proc/self/fd/{}", fd);
  pci_access* a = new_access();
  a->method = PCI_ACCESS_DUMP;
  pci_set_param(a, const_cast<char*>("dump.name"), const_cast<char*>(name.c_str()));
  InitArgs init{a};
  if (!guarded(do_init, &init)) {
    ::close(fd);
    return make_error(Errc::kCorruptData, "libpci (dump): {}", t_message);
  }
  std::vector<PciFunction> out;
  for (const auto& dev : dump.devices) {
    pci_dev* found = nullptr;
    for (pci_dev* d = a->devices; d; d = d->next) {
      if (bdf_of(d) == dev.bdf) found = d;
    }
    if (!found) {
      pci_cleanup(a);
      ::close(fd);
      return make_error(Errc::kInternal, "libpci did not list {} from the dump", dev.bdf);
    }
    PciFunction fn;
    fn.bdf = dev.bdf;
    read_config(found, fn);
    fn.known = dev.known;
    for (size_t i = 0; i < fn.bytes.size(); ++i) {
      if (fn.known[i] && fn.bytes[i] != dev.bytes[i]) {
        pci_cleanup(a);
        ::close(fd);
        return make_error(Errc::kInternal,
                          "libpci read {} byte 0x{:x} as {:02x}, the dump has {:02x}", dev.bdf, i,
                          fn.bytes[i], dev.bytes[i]);
      }
    }
    out.push_back(std::move(fn));
  }
  pci_cleanup(a);
  ::close(fd);
  return out;
}

}  // namespace ringserve::preflight
