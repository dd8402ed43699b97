// A compiled PCRE2 pattern in UTF + Unicode-property mode (so \p{L}, \s and
// case folding follow Unicode, as Oniguruma does in Hugging Face tokenizers),
// JIT-compiled where PCRE2 supports it. The compiled code is immutable and
// shared; match data and the JIT stack are per thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "ringserve/common/expected.h"

namespace ringserve::tokenizer {

class Regex {
 public:
  // `pattern` is written for Oniguruma, as in tokenizer.json; the Unicode
  // classes \s \S \w \W are rewritten so that PCRE2 matches the same set.
  static Expected<Regex> compile(std::string_view pattern);

  struct Match {
    size_t begin = 0;
    size_t end = 0;
  };
  enum class Result { kMatch, kNoMatch, kError };

  // Searches `subject` (valid UTF-8, checked by the caller) from byte offset
  // `start`, which must be a code point boundary. kError means PCRE2 hit a
  // resource limit on hostile input; callers degrade instead of failing.
  Result find(std::string_view subject, size_t start, Match* match) const;

  bool jit() const { return jit_; }

 private:
  struct CodeDeleter {
    void operator()(void* code) const;
  };
  std::shared_ptr<void> code_;
  bool jit_ = false;
};

}  // namespace ringserve::tokenizer
