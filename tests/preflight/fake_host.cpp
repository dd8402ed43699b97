#include "fake_host.h"

#include <fstream>
#include <stdexcept>

#include "preflight/dump_parser.h"

namespace ringserve::preflight::testing {
namespace fs = std::filesystem;

FakeHost::FakeHost() {
  fs::create_directories(sys() / "bus" / "pci" / "devices");
  fs::create_directories(sys() / "devices" / "pci0000:00");
  fs::create_directories(proc() / "sys" / "kernel" / "random");
  write(proc() / "cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet\n");
  write(proc() / "sys" / "kernel" / "io_uring_disabled", "0\n");
  write(proc() / "cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2\n");
  set_boot_id("11111111-2222-3333-4444-555555555555");
}

void FakeHost::write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out << text;
}

void FakeHost::set_boot_id(const std::string& id) {
  write(proc() / "sys" / "kernel" / "random" / "boot_id", id + "\n");
}

fs::path FakeHost::add_device(const std::string& bdf, const std::string& parent_bdf,
                              const std::vector<uint8_t>& config) {
  fs::path parent = parent_bdf.empty() ? sys() / "devices" / "pci0000:00" : devices_.at(parent_bdf);
  fs::path dir = parent / bdf;
  fs::create_directories(dir);
  std::ofstream(dir / "config", std::ios::binary)
      .write(reinterpret_cast<const char*>(config.data()),
             static_cast<std::streamsize>(config.size()));
  fs::create_symlink(fs::relative(dir, sys() / "bus" / "pci" / "devices"),
                     sys() / "bus" / "pci" / "devices" / bdf);
  devices_[bdf] = dir;
  return dir;
}

fs::path FakeHost::device_dir(const std::string& bdf) const {
  return devices_.at(bdf);
}

void FakeHost::add_gpu_attributes(const std::string& bdf, const std::vector<int>& irqs,
                                  bool irq_dirs) {
  const fs::path dir = devices_.at(bdf);
  write(dir / "current_link_speed", "8.0 GT/s PCIe\n");
  write(dir / "max_link_speed", "8.0 GT/s PCIe\n");
  write(dir / "current_link_width", "4\n");
  write(dir / "max_link_width", "4\n");
  write(dir / "numa_node", "0\n");
  write(dir / "local_cpulist", "0-3\n");
  write(dir / "power" / "control", "auto\n");
  write(dir / "link" / "l1_aspm", "1\n");
  write(dir / "link" / "l0s_aspm", "1\n");
  for (int irq : irqs) {
    if (irq_dirs) {
      write(dir / "msi_irqs" / std::to_string(irq) / "mode", "msix\n");
    } else {
      write(dir / "msi_irqs" / std::to_string(irq), "msix\n");
    }
    write(proc() / "irq" / std::to_string(irq) / "smp_affinity_list", "0-7\n");
    write(proc() / "irq" / std::to_string(irq) / "effective_affinity_list", "6\n");
  }
}

std::vector<uint8_t> fixture_config(const std::string& fixture, const std::string& bdf,
                                    size_t bytes) {
  std::ifstream in(ringserve::testing::fixture_path("lspci/" + fixture), std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto dump = parse_lspci_dump(text);
  if (!dump) throw std::runtime_error(dump.error().to_string());
  for (const auto& d : dump->devices) {
    if (d.bdf == bdf) return std::vector<uint8_t>(d.bytes.begin(), d.bytes.begin() + bytes);
  }
  throw std::runtime_error("no " + bdf + " in " + fixture);
}

}  // namespace ringserve::preflight::testing
