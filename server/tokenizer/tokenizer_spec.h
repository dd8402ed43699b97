// What a tokenizer.json says, validated and reduced to what we implement:
// a byte-level BPE model, its added tokens, Unicode normalization and a
// pre-tokenizer pipeline. Anything outside that subset is a clear
// kUnsupported error rather than a silently different tokenization.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::tokenizer {

// Ids above this are rejected at load: real vocabularies stay below 300k and
// every per-id table is sized by the highest id.
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 22) - 1;

struct AddedTokenSpec {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  // matched after normalization instead of on raw text
};

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct SplitStep {
  std::string pcre2_pattern;  // a "String" pattern arrives here escaped
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

struct ByteLevelStep {
  bool add_prefix_space = false;
  bool use_regex = true;  // the GPT-2 split, built into the ByteLevel pre-tokenizer
};

using PreTokenizerStep = std::variant<SplitStep, ByteLevelStep>;

struct TokenizerSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;       // byte-level spelling -> id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedTokenSpec> added_tokens;
  std::vector<NormalForm> normalizers;  // applied in order
  std::vector<PreTokenizerStep> pre_tokenizers;
  bool ignore_merges = false;
};

// The pattern of Hugging Face's ByteLevel pre-tokenizer when use_regex is
// true (GPT-2's split); it is part of that component, not of the file.
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Expected<TokenizerSpec> parse_tokenizer_json(std::string_view json_text, std::string_view source);

}  // namespace ringserve::tokenizer
