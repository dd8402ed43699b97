#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

namespace ringserve::tokenizer {

namespace {

// Per-thread matching state: PCRE2 match data must not be shared between
// threads, and a JIT stack larger than the 32 KiB default keeps long runs of
// whitespace (the lookahead alternatives) from failing.
class ThreadMatchState {
 public:
  ThreadMatchState() {
    data_ = pcre2_match_data_create(1, nullptr);
    context_ = pcre2_match_context_create(nullptr);
    jit_stack_ = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    if (context_ && jit_stack_) pcre2_jit_stack_assign(context_, nullptr, jit_stack_);
    // Bounded backtracking: pathological inputs fail fast instead of hanging.
    if (context_) pcre2_set_match_limit(context_, 10'000'000);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data_);
    pcre2_match_context_free(context_);
    if (jit_stack_) pcre2_jit_stack_free(jit_stack_);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;

  pcre2_match_data* data() const { return data_; }
  pcre2_match_context* context() const { return context_; }

 private:
  pcre2_match_data* data_ = nullptr;
  pcre2_match_context* context_ = nullptr;
  pcre2_jit_stack* jit_stack_ = nullptr;
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

// Hugging Face runs these patterns with Oniguruma, whose Unicode \s is
// [\t-\r\x85] plus Zs/Zl/Zp and whose \w is letters, marks, decimal digits
// and connector punctuation. PCRE2's UCP classes differ at the edges (its \s
// also takes U+180E, its \w skips marks), so these escapes are spelled out.
std::string translate_oniguruma(std::string_view pattern) {
  constexpr std::string_view kSpace = "\\t-\\r\\x{85}\\p{Z}";
  constexpr std::string_view kWord = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
  std::string out;
  out.reserve(pattern.size() + 32);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      ++i;
      if (e == 's' || e == 'w') {
        const std::string_view set = e == 's' ? kSpace : kWord;
        if (in_class)
          out.append(set);
        else
          out.append("[").append(set).append("]");
      } else if ((e == 'S' || e == 'W') && !in_class) {
        out.append("[^").append(e == 'S' ? kSpace : kWord).append("]");
      } else {
        out.push_back(c);
        out.push_back(e);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal member, not the end.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

void Regex::CodeDeleter::operator()(void* code) const {
  pcre2_code_free(static_cast<pcre2_code*>(code));
}

Expected<Regex> Regex::compile(std::string_view oniguruma_pattern) {
  const std::string pattern = translate_oniguruma(oniguruma_pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return make_error(Errc::kCorruptData, "regex /{}/ at offset {}: {}", oniguruma_pattern, offset,
                      reinterpret_cast<const char*>(message));
  }
  Regex re;
  re.code_ = std::shared_ptr<void>(code, CodeDeleter{});
  re.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return re;
}

Regex::Result Regex::find(std::string_view subject, size_t start, Match* match) const {
  ThreadMatchState& state = thread_state();
  if (!state.data()) return Result::kError;
  const int rc = pcre2_match(static_cast<const pcre2_code*>(code_.get()),
                             reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), start,
                             PCRE2_NO_UTF_CHECK, state.data(), state.context());
  if (rc == PCRE2_ERROR_NOMATCH) return Result::kNoMatch;
  // rc == 0: the match vector was too small for the captures, but the whole
  // match (pair 0) is still filled in.
  if (rc < 0) return Result::kError;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state.data());
  match->begin = ov[0];
  match->end = ov[1];
  if (match->end < match->begin) return Result::kError;  // \K tricks in a lookahead
  return Result::kMatch;
}

}  // namespace ringserve::tokenizer
