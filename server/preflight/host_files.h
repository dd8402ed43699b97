// Small, bounded reads of sysfs/procfs attribute files. Absence is normal
// (old kernels, VMs, fake trees), so "missing" is an empty optional, not an
// error; only a file that exists but cannot be read is worth a note.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ringserve::preflight {

// The file's text without the trailing newline, at most 64 KiB.
std::optional<std::string> read_attr(const std::filesystem::path& path);

// Leading number of a sysfs link speed: "8 GT/s", "16.0 GT/s", "32.0 GT/s PCIe";
// nullopt for "Unknown" or anything without a number.
std::optional<double> parse_link_speed(std::string_view text);

}  // namespace ringserve::preflight
