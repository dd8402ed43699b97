// Helpers shared by the test suites.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace ringserve::testing {

// tests/fixtures/<relative>
std::filesystem::path fixture_path(const std::string& relative);

// <build>/bin/<name>: binaries under test (ringserve, ringctl, ringbench).
std::filesystem::path binary_path(const std::string& name);

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::filesystem::path& path);

// Seed for randomized tests: RINGSERVE_TEST_SEED if set, else random; the
// value is printed so a failure can be replayed.
uint64_t test_seed();

}  // namespace ringserve::testing
