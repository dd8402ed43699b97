// Added tokens (special and not) are cut out of the text whole before any
// normalization or BPE. Matching is leftmost-longest over a byte trie, like
// the Aho-Corasick automaton of Hugging Face tokenizers, and honors each
// token's single_word / lstrip / rstrip flags.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer_spec.h"

namespace ringserve::tokenizer {

class AddedTokenMatcher {
 public:
  // `tokens` must outlive the matcher; `which` selects the ones it matches
  // (by index into `tokens`), with `pattern_of(i)` the text to look for.
  void build(const std::vector<AddedTokenSpec>& tokens, const std::vector<size_t>& which,
             const std::vector<std::string>& patterns);

  bool empty() const { return nodes_.size() <= 1; }

  // Splits `text` into plain runs and added-token ids, in order. With
  // skip_special, tokens marked special are left in the text (as Hugging
  // Face's encode_special_tokens does).
  void split(std::string_view text, bool skip_special,
             const std::function<void(std::string_view)>& on_text,
             const std::function<void(int32_t)>& on_token) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, uint32_t>> children;
    int32_t token = -1;  // index into tokens_ of a token ending here
  };
  // Leftmost-longest match starting at or after `from`.
  bool find(std::string_view text, size_t from, size_t* begin, size_t* end, int32_t* token) const;

  const std::vector<AddedTokenSpec>* tokens_ = nullptr;
  std::vector<Node> nodes_{1};
  std::array<bool, 256> first_byte_{};
};

}  // namespace ringserve::tokenizer
