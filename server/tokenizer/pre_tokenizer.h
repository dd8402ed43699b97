// The pre-tokenizer pipeline of a tokenizer.json (Split with a regex or a
// literal, ByteLevel), cutting normalized text into the pieces that BPE then
// encodes one at a time. Semantics follow Hugging Face tokenizers: each step
// runs on every piece of the previous one, and empty pieces are dropped.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "ringserve/common/expected.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer_spec.h"

namespace ringserve::tokenizer {

class PreTokenizer {
 public:
  static Expected<PreTokenizer> create(const std::vector<PreTokenizerStep>& steps);

  // Scratch space for one split() call; reuse it to avoid allocations. The
  // pieces are views into the input or into `owned` (pieces that a ByteLevel
  // step gave a leading space).
  struct Pieces {
    std::vector<std::string_view> pieces;
    std::vector<std::string_view> next;
    std::deque<std::string> owned;
    std::vector<std::pair<size_t, bool>> bounds;  // (end offset, is delimiter)
  };

  // `text` must be valid UTF-8. Result in out.pieces.
  void split(std::string_view text, Pieces& out) const;

 private:
  struct Step {
    Regex regex;
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool prefix_space = false;  // ByteLevel add_prefix_space, applied before the regex
    bool has_regex = true;
  };
  void apply(const Step& step, std::string_view piece, Pieces& scratch) const;

  std::vector<Step> steps_;
};

}  // namespace ringserve::tokenizer
