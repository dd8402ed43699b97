#include "engine/kv_cache.h"

namespace ringserve::engine::cpu {

KvCache::KvCache(int layers, int kv_dim, int block_tokens, int64_t blocks)
    : layers_(layers), kv_dim_(kv_dim), block_tokens_(block_tokens), blocks_total_(blocks) {
  data_.resize(static_cast<size_t>(blocks) * bytes_per_block(layers, kv_dim, block_tokens) /
               sizeof(float));
  free_.reserve(blocks);
  for (int64_t b = blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

Status KvCache::allocate(int64_t count, std::vector<int32_t>& table) {
  if (count > blocks_free()) {
    return make_error(Errc::kResourceExhausted, "KV cache: {} blocks wanted, {} of {} free", count,
                      blocks_free(), blocks_total_);
  }
  for (int64_t i = 0; i < count; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  return ok();
}

void KvCache::release(std::vector<int32_t>& table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it) free_.push_back(*it);
  table.clear();
}

}  // namespace ringserve::engine::cpu
