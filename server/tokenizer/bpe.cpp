#include "tokenizer/bpe.h"

#include <algorithm>
#include <functional>
#include <mutex>

#include "tokenizer/byte_level.h"

namespace ringserve::tokenizer {

// Bounded, thread-safe memo of piece -> ids. Sharded so that threads
// encoding at once rarely meet on one mutex; a full shard is simply
// cleared, which bounds memory without bookkeeping on every hit.
class BpeCache {
 public:
  static constexpr size_t kShards = 16;
  static constexpr size_t kEntriesPerShard = 8192;
  static constexpr size_t kMaxPieceBytes = 64;

  bool lookup(std::string_view piece, size_t hash, std::vector<int32_t>& out) {
    Shard& s = shards_[hash % kShards];
    std::lock_guard lock(s.mu);
    const auto it = s.map.find(piece);
    if (it == s.map.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }

  void store(std::string_view piece, size_t hash, const int32_t* ids, size_t n) {
    Shard& s = shards_[hash % kShards];
    std::lock_guard lock(s.mu);
    if (s.map.size() >= kEntriesPerShard) s.map.clear();
    s.map.try_emplace(std::string(piece), ids, ids + n);
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map;
  };
  std::array<Shard, kShards> shards_;
};

BpeModel::BpeModel() : cache_(std::make_unique<BpeCache>()) {}
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;
BpeModel::~BpeModel() = default;

Expected<BpeModel> BpeModel::build(const TokenizerSpec& spec, std::string_view source) {
  BpeModel m;
  m.ignore_merges_ = spec.ignore_merges;
  m.spelled_to_id_.reserve(spec.vocab.size());
  for (const auto& [spelled, id] : spec.vocab) {
    m.spelled_to_id_.emplace(spelled, id);
    if (m.ignore_merges_) {
      if (auto bytes = byte_level::to_bytes(spelled)) m.bytes_to_id_.emplace(std::move(*bytes), id);
    }
  }
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    const std::string spelled = byte_level::to_spelling(std::string_view(&byte, 1));
    const auto it = m.spelled_to_id_.find(spelled);
    m.byte_token_[b] = it == m.spelled_to_id_.end() ? -1 : it->second;
  }
  m.merges_.reserve(spec.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [left, right] = spec.merges[rank];
    const auto l = m.spelled_to_id_.find(left);
    const auto r = m.spelled_to_id_.find(right);
    joined.assign(left).append(right);
    const auto j = m.spelled_to_id_.find(joined);
    const std::string_view missing = l == m.spelled_to_id_.end()   ? std::string_view(left)
                                     : r == m.spelled_to_id_.end() ? std::string_view(right)
                                     : j == m.spelled_to_id_.end() ? std::string_view(joined)
                                                                   : std::string_view();
    if (!missing.empty()) {
      return make_error(Errc::kCorruptData,
                        "{}: merge {} (\"{}\" \"{}\"): \"{}\" is not in the vocab", source, rank,
                        left, right, missing);
    }
    m.merges_.insert(l->second, r->second, PairMap::Entry{static_cast<uint32_t>(rank), j->second});
  }
  return m;
}

void BpeModel::merge_by_scan(std::vector<int32_t>& sym) const {
  constexpr uint32_t kNone = UINT32_MAX;
  size_t n = sym.size();
  if (n < 2) return;
  // ranks[i] / merged[i] describe the pair (sym[i], sym[i + 1]).
  thread_local std::vector<uint32_t> ranks;
  thread_local std::vector<int32_t> merged;
  ranks.resize(n - 1);
  merged.resize(n - 1);
  auto look = [&](size_t i) {
    const PairMap::Entry* e = merges_.find(sym[i], sym[i + 1]);
    ranks[i] = e ? e->rank : kNone;
    merged[i] = e ? e->id : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i) look(i);
  while (n > 1) {
    size_t best = 0;
    uint32_t best_rank = ranks[0];
    for (size_t i = 1; i + 1 < n; ++i) {
      if (ranks[i] < best_rank) {
        best_rank = ranks[i];
        best = i;
      }
    }
    if (best_rank == kNone) break;
    sym[best] = merged[best];
    sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    ranks.erase(ranks.begin() + static_cast<std::ptrdiff_t>(best));
    merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(best));
    --n;
    if (best > 0) look(best - 1);
    if (best + 1 < n) look(best);
  }
}

void BpeModel::merge_by_heap(std::vector<int32_t>& sym) const {
  const size_t n = sym.size();
  if (n < 2) return;
  constexpr uint32_t kEnd = UINT32_MAX;
  thread_local std::vector<uint32_t> prev, next;
  thread_local std::vector<uint8_t> alive;
  prev.resize(n);
  next.resize(n);
  alive.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = i == 0 ? kEnd : static_cast<uint32_t>(i - 1);
    next[i] = i + 1 == n ? kEnd : static_cast<uint32_t>(i + 1);
  }
  // Min-heap of (rank, position): the lowest rank first, then the leftmost.
  using Item = std::pair<uint32_t, uint32_t>;
  thread_local std::vector<Item> heap;
  heap.clear();
  const auto later = std::greater<Item>{};
  auto push = [&](uint32_t i) {
    if (i == kEnd || next[i] == kEnd) return;
    if (const PairMap::Entry* e = merges_.find(sym[i], sym[next[i]])) {
      heap.emplace_back(e->rank, i);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const auto [rank, i] = heap.back();
    heap.pop_back();
    if (!alive[i] || next[i] == kEnd) continue;
    const uint32_t j = next[i];
    // Ranks are unique per pair, so a matching rank means the entry is current.
    const PairMap::Entry* e = merges_.find(sym[i], sym[j]);
    if (!e || e->rank != rank) continue;
    sym[i] = e->id;
    alive[j] = 0;
    next[i] = next[j];
    if (next[j] != kEnd) prev[next[j]] = i;
    push(prev[i]);
    push(i);
  }
  size_t w = 0;
  for (uint32_t i = 0; i != kEnd; i = next[i]) sym[w++] = sym[i];
  sym.resize(w);
}

void BpeModel::encode_uncached(std::string_view bytes, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (const auto it = bytes_to_id_.find(std::string(bytes)); it != bytes_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  thread_local std::vector<int32_t> sym;
  sym.clear();
  // A byte without a vocab entry is dropped, as Hugging Face does when the
  // model has no unk token.
  for (const char c : bytes) {
    const int32_t id = byte_token_[static_cast<uint8_t>(c)];
    if (id >= 0) sym.push_back(id);
  }
  if (sym.size() <= kScanLimit) {
    merge_by_scan(sym);
  } else {
    merge_by_heap(sym);
  }
  out.insert(out.end(), sym.begin(), sym.end());
}

void BpeModel::encode_piece(std::string_view bytes, std::vector<int32_t>& out) const {
  if (bytes.size() == 1) {
    const int32_t id = byte_token_[static_cast<uint8_t>(bytes[0])];
    if (id >= 0) out.push_back(id);
    return;
  }
  if (bytes.size() > BpeCache::kMaxPieceBytes) {
    encode_uncached(bytes, out);
    return;
  }
  const size_t hash = std::hash<std::string_view>{}(bytes);
  if (cache_->lookup(bytes, hash, out)) return;
  const size_t before = out.size();
  encode_uncached(bytes, out);
  cache_->store(bytes, hash, out.data() + before, out.size() - before);
}

}  // namespace ringserve::tokenizer
