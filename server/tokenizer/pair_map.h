// Open-addressing hash map from a merge pair (left id, right id) to its rank
// and the id it produces. BPE does one lookup per adjacent pair per merge
// step, so this is the innermost loop of encoding: flat, no allocation, one
// multiply per hash.
#pragma once

#include <cstdint>
#include <vector>

namespace ringserve::tokenizer {

class PairMap {
 public:
  struct Entry {
    uint32_t rank;
    int32_t id;
  };

  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Slot{kEmpty, {0, 0}});
    mask_ = cap - 1;
    size_ = 0;
  }

  // Later inserts of the same pair win, as in Hugging Face (its merges map
  // is collected from the list in order).
  void insert(int32_t left, int32_t right, Entry entry) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    place(key(left, right), entry);
  }

  const Entry* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t k = key(left, right);
    for (size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == k) return &s.entry;
      if (s.key == kEmpty) return nullptr;
    }
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    Entry entry;
  };
  // Ids are below 2^22, so no real pair packs to all ones.
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  static size_t hash(uint64_t k) {
    const uint64_t h = k * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }

  void place(uint64_t k, Entry entry) {
    for (size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == k) {
        s.entry = entry;
        return;
      }
      if (s.key == kEmpty) {
        s = Slot{k, entry};
        ++size_;
        return;
      }
    }
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reserve(old.empty() ? 8 : old.size());
    for (const Slot& s : old) {
      if (s.key != kEmpty) place(s.key, s.entry);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace ringserve::tokenizer
