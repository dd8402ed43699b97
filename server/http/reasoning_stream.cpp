#include "http/reasoning_stream.h"

#include <algorithm>

namespace ringserve::http {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ReasoningStream::Delta ReasoningStream::push(std::string_view text) {
  held_.append(text);
  Delta out;
  if (at_start_ && in_reasoning_) {
    const size_t ws = held_.find_first_not_of(" \n");
    if (ws == std::string::npos) return out;
    std::string_view rest(held_);
    rest.remove_prefix(ws);
    if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return out;
    if (rest.substr(0, kOpen.size()) == kOpen) held_.erase(0, ws + kOpen.size());
    at_start_ = false;
  }
  if (in_reasoning_) {
    const size_t close = held_.find(kClose);
    if (close == std::string::npos) {
      const size_t keep = partial_tag_suffix(held_, kClose);
      out.reasoning = held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    out.reasoning = held_.substr(0, close);
    held_.erase(0, close + kClose.size());
    in_reasoning_ = false;
    after_close_ = true;
  }
  if (after_close_) {
    const size_t start = held_.find_first_not_of('\n');
    if (start == std::string::npos) {
      held_.clear();
      return out;
    }
    held_.erase(0, start);
    after_close_ = false;
  }
  out.content += held_;
  held_.clear();
  return out;
}

ReasoningStream::Delta ReasoningStream::flush() {
  Delta out;
  if (in_reasoning_) {
    out.reasoning = std::move(held_);
  } else if (!after_close_) {
    out.content = std::move(held_);
  }
  held_.clear();
  return out;
}

}  // namespace ringserve::http
