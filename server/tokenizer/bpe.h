// The byte-level BPE model: initial symbols are single bytes, and the pair
// with the lowest merge rank is merged first (the leftmost one among equal
// ranks), until no adjacent pair has a merge. Results for frequent pieces are
// kept in a bounded, sharded cache so that steady-state encoding is mostly
// hash lookups.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringserve/common/expected.h"
#include "tokenizer/pair_map.h"
#include "tokenizer/tokenizer_spec.h"

namespace ringserve::tokenizer {

class BpeCache;

class BpeModel {
 public:
  static Expected<BpeModel> build(const TokenizerSpec& spec, std::string_view source);

  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;
  ~BpeModel();

  // Appends the ids of one pre-tokenized piece (raw bytes).
  void encode_piece(std::string_view bytes, std::vector<int32_t>& out) const;

  // The id of the single-byte token for b, or -1 when the vocab lacks it.
  int32_t byte_token(uint8_t b) const { return byte_token_[b]; }

  // Vocab lookup by byte-level spelling ("Ġhello").
  const std::unordered_map<std::string, int32_t>& spelled_to_id() const { return spelled_to_id_; }

  // The two merge loops, exposed so tests can check they agree: a rank scan
  // (fast for short pieces) and a heap over a linked list (O(n log n), for
  // long ones). Both rewrite `symbols` in place.
  void merge_by_scan(std::vector<int32_t>& symbols) const;
  void merge_by_heap(std::vector<int32_t>& symbols) const;

  // Pieces up to this many bytes use the scan.
  static constexpr size_t kScanLimit = 96;

 private:
  BpeModel();
  void encode_uncached(std::string_view bytes, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> spelled_to_id_;
  std::unordered_map<std::string, int32_t> bytes_to_id_;  // only with ignore_merges
  std::array<int32_t, 256> byte_token_{};
  PairMap merges_;
  bool ignore_merges_ = false;
  std::unique_ptr<BpeCache> cache_;
};

}  // namespace ringserve::tokenizer
