// Host-side bookkeeping of the paged KV pool: which blocks are free. The
// block contents live on the GPU (forward.h: KvPool).
#pragma once

#include <cstdint>
#include <vector>

namespace ringserve::cuda {

class KvBlocks {
 public:
  KvBlocks() = default;
  explicit KvBlocks(int64_t blocks) : total_(blocks) {
    free_.reserve(static_cast<size_t>(blocks));
    for (int64_t b = blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
  }
  int64_t total() const { return total_; }
  int64_t free() const { return static_cast<int64_t>(free_.size()); }
  // Appends `count` blocks to `table`; false (and no change) when too few are free.
  bool allocate(int64_t count, std::vector<int32_t>& table) {
    if (count > free()) return false;
    for (int64_t i = 0; i < count; ++i) {
      table.push_back(free_.back());
      free_.pop_back();
    }
    return true;
  }
  void release(std::vector<int32_t>& table) {
    free_.insert(free_.end(), table.rbegin(), table.rend());
    table.clear();
  }

 private:
  int64_t total_ = 0;
  std::vector<int32_t> free_;
};

}  // namespace ringserve::cuda
