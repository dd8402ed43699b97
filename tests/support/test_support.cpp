#include "support/test_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ringserve::testing {

std::filesystem::path fixture_path(const std::string& relative) {
  return std::filesystem::path(RINGSERVE_FIXTURES_DIR) / relative;
}

std::filesystem::path binary_path(const std::string& name) {
  return std::filesystem::path(RINGSERVE_BINARY_DIR) / name;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "ringserve-test-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

uint64_t test_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("RINGSERVE_TEST_SEED"))
      return static_cast<uint64_t>(std::strtoull(env, nullptr, 0));
    uint64_t s = std::random_device{}();
    s = (s << 32) ^ std::random_device{}();
    std::fprintf(stderr, "[ringserve] RINGSERVE_TEST_SEED=%llu\n",
                 static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

}  // namespace ringserve::testing
