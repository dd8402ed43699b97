// Files with known contents for the reader tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "io/file_reader.h"

namespace ringserve::io::testing {

inline std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

inline void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good());
}

// The forced combinations; io_uring ones may be unavailable (the test skips).
struct PathCase {
  Backend backend;
  DirectIo direct;
  Method expected;
};

inline const std::vector<PathCase>& forced_paths() {
  static const std::vector<PathCase> kCases{
      {Backend::kIoUring, DirectIo::kOn, Method::kIoUringDirect},
      {Backend::kIoUring, DirectIo::kOff, Method::kIoUringBuffered},
      {Backend::kPread, DirectIo::kOn, Method::kPreadDirect},
      {Backend::kPread, DirectIo::kOff, Method::kPreadBuffered},
  };
  return kCases;
}

}  // namespace ringserve::io::testing
