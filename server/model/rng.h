// Counter-based random streams for the synthetic generators: every
// (seed, tensor, row) gets its own stream, so output does not depend on how
// rows are split over threads.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringserve::model {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class RowRng {
 public:
  RowRng(uint64_t seed, uint64_t tensor, uint64_t row) {
    state_ = seed;
    state_ = splitmix64(state_) ^ (tensor * 0xd1b54a32d192ed03ull);
    state_ = splitmix64(state_) ^ (row * 0x8cb92ba72f3d8dd7ull);
  }
  uint64_t next() { return splitmix64(state_); }
  // Uniform in [-1, 1).
  float uniform_pm1() {
    return static_cast<float>(static_cast<int64_t>(next() >> 40) - (1 << 23)) * 0x1p-23f;
  }

 private:
  uint64_t state_;
};

// Stable id of a tensor name, so streams survive reordering of the layout.
inline uint64_t name_id(std::string_view name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace ringserve::model
