#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include "tokenizer/utf8.h"

namespace ringserve::tokenizer {

namespace {

// The code point that ends just before `pos`, if the bytes there decode.
bool code_point_before(std::string_view s, size_t pos, char32_t* cp, size_t* len) {
  for (size_t back = 1; back <= 4 && back <= pos; ++back) {
    const auto b = static_cast<uint8_t>(s[pos - back]);
    if ((b & 0xC0) == 0x80) continue;
    if (utf8::valid_sequence_length(s, pos - back) != back) return false;
    *cp = utf8::decode(s, pos - back, len);
    return true;
  }
  return false;
}

bool code_point_at(std::string_view s, size_t pos, char32_t* cp, size_t* len) {
  if (pos >= s.size() || utf8::valid_sequence_length(s, pos) == 0) return false;
  *cp = utf8::decode(s, pos, len);
  return true;
}

// Rust's char::is_alphanumeric: letters and numbers.
bool is_word_char(char32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

}  // namespace

void AddedTokenMatcher::build(const std::vector<AddedTokenSpec>& tokens,
                              const std::vector<size_t>& which,
                              const std::vector<std::string>& patterns) {
  tokens_ = &tokens;
  nodes_.assign(1, Node{});
  first_byte_.fill(false);
  for (size_t k = 0; k < which.size(); ++k) {
    const std::string& pattern = patterns[k];
    if (pattern.empty()) continue;
    first_byte_[static_cast<uint8_t>(pattern[0])] = true;
    uint32_t node = 0;
    for (const char c : pattern) {
      const auto byte = static_cast<uint8_t>(c);
      uint32_t child = 0;
      for (const auto& [b, n] : nodes_[node].children) {
        if (b == byte) child = n;
      }
      if (child == 0) {
        child = static_cast<uint32_t>(nodes_.size());
        nodes_[node].children.emplace_back(byte, child);
        nodes_.emplace_back();
      }
      node = child;
    }
    nodes_[node].token = static_cast<int32_t>(which[k]);
  }
}

bool AddedTokenMatcher::find(std::string_view text, size_t from, size_t* begin, size_t* end,
                             int32_t* token) const {
  for (size_t start = from; start < text.size(); ++start) {
    if (!first_byte_[static_cast<uint8_t>(text[start])]) continue;
    uint32_t node = 0;
    int32_t best = -1;
    size_t best_end = 0;
    for (size_t i = start; i < text.size(); ++i) {
      const auto byte = static_cast<uint8_t>(text[i]);
      uint32_t child = 0;
      for (const auto& [b, n] : nodes_[node].children) {
        if (b == byte) {
          child = n;
          break;
        }
      }
      if (child == 0) break;
      node = child;
      if (nodes_[node].token >= 0) {
        best = nodes_[node].token;
        best_end = i + 1;
      }
    }
    if (best >= 0) {
      *begin = start;
      *end = best_end;
      *token = best;
      return true;
    }
  }
  return false;
}

void AddedTokenMatcher::split(std::string_view text, bool skip_special,
                              const std::function<void(std::string_view)>& on_text,
                              const std::function<void(int32_t)>& on_token) const {
  size_t emitted = 0;  // text before this offset has been handed out
  size_t search = 0;
  if (!empty()) {
    size_t begin = 0, end = 0;
    int32_t index = -1;
    while (search < text.size() && find(text, search, &begin, &end, &index)) {
      search = end;
      const AddedTokenSpec& tok = (*tokens_)[static_cast<size_t>(index)];
      if (skip_special && tok.special) continue;
      char32_t cp = 0;
      size_t len = 0;
      if (tok.single_word) {
        const bool word_before = code_point_before(text, begin, &cp, &len) && is_word_char(cp);
        const bool word_after = code_point_at(text, end, &cp, &len) && is_word_char(cp);
        if (word_before || word_after) continue;
      }
      if (tok.lstrip) {
        while (begin > emitted && code_point_before(text, begin, &cp, &len) &&
               utf8::is_white_space(cp) && begin - len >= emitted) {
          begin -= len;
        }
      }
      if (tok.rstrip) {
        while (code_point_at(text, end, &cp, &len) && utf8::is_white_space(cp)) end += len;
        search = end;
      }
      if (begin > emitted) on_text(text.substr(emitted, begin - emitted));
      on_token(tok.id);
      emitted = end;
    }
  }
  if (emitted < text.size()) on_text(text.substr(emitted));
}

}  // namespace ringserve::tokenizer
