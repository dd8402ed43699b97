// Fake sysfs and procfs trees in a temp dir, shaped like the kernel's:
// devices live under sys/devices/pci0000:00/..., sys/bus/pci/devices/<bdf>
// are symlinks to them (so the parent is the realpath's parent directory).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace ringserve::preflight::testing {

class FakeHost {
 public:
  FakeHost();
  std::filesystem::path sys() const { return dir_.path() / "sys"; }
  std::filesystem::path proc() const { return dir_.path() / "proc"; }
  std::filesystem::path root() const { return dir_.path(); }

  // Adds a device below `parent_bdf` ("" = the root bus); returns its directory.
  std::filesystem::path add_device(const std::string& bdf, const std::string& parent_bdf,
                                   const std::vector<uint8_t>& config);
  std::filesystem::path device_dir(const std::string& bdf) const;
  void write(const std::filesystem::path& path, const std::string& text);

  // Writes the attributes a present GPU has on a recent kernel.
  void add_gpu_attributes(const std::string& bdf, const std::vector<int>& irqs,
                          bool irq_dirs = false);
  void set_boot_id(const std::string& id);

 private:
  ringserve::testing::TempDir dir_;
  std::map<std::string, std::filesystem::path> devices_;
};

// Config bytes of the named device in a fixture dump (4 KiB, 0xFF where unknown).
std::vector<uint8_t> fixture_config(const std::string& fixture, const std::string& bdf,
                                    size_t bytes = 4096);

}  // namespace ringserve::preflight::testing
