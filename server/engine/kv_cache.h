// Paged KV cache for the CPU engine: a pool of fixed-size blocks, each
// holding `block_tokens` positions of K and V for every layer, and a free
// list. A sequence owns a block table (its blocks in position order), so
// admission can count capacity in blocks and memory never fragments.
// Stored in fp32: the CPU engine is the numeric reference.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::engine::cpu {

class KvCache {
 public:
  KvCache(int layers, int kv_dim, int block_tokens, int64_t blocks);

  static int64_t bytes_per_block(int layers, int kv_dim, int block_tokens) {
    return static_cast<int64_t>(layers) * 2 * block_tokens * kv_dim * sizeof(float);
  }
  static int64_t blocks_for(int64_t tokens, int block_tokens) {
    return (tokens + block_tokens - 1) / block_tokens;
  }

  int block_tokens() const { return block_tokens_; }
  int64_t blocks_total() const { return blocks_total_; }
  int64_t blocks_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t blocks_used() const { return blocks_total_ - blocks_free(); }

  // Appends `count` blocks to `table`; kResourceExhausted (and no change)
  // when fewer are free.
  Status allocate(int64_t count, std::vector<int32_t>& table);
  // Returns every block of `table` to the pool and clears it.
  void release(std::vector<int32_t>& table);

  // K or V of one position of one layer: kv_dim floats.
  float* key(std::span<const int32_t> table, int layer, int pos) {
    return slot(table, layer, pos, 0);
  }
  float* value(std::span<const int32_t> table, int layer, int pos) {
    return slot(table, layer, pos, 1);
  }
  const float* key(std::span<const int32_t> table, int layer, int pos) const {
    return const_cast<KvCache*>(this)->slot(table, layer, pos, 0);
  }
  const float* value(std::span<const int32_t> table, int layer, int pos) const {
    return const_cast<KvCache*>(this)->slot(table, layer, pos, 1);
  }

 private:
  float* slot(std::span<const int32_t> table, int layer, int pos, int kv) {
    const int32_t block = table[pos / block_tokens_];
    const size_t index = ((static_cast<size_t>(block) * layers_ + layer) * 2 + kv) * block_tokens_ +
                         pos % block_tokens_;
    return data_.data() + index * kv_dim_;
  }

  int layers_;
  int kv_dim_;
  int block_tokens_;
  int64_t blocks_total_;
  std::vector<float> data_;
  std::vector<int32_t> free_;  // a stack: recently freed blocks are reused first
};

}  // namespace ringserve::engine::cpu
