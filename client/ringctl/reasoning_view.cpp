#include "reasoning_view.h"

#include <algorithm>

namespace ringctl {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

// Length of the longest tail of `s` that is a proper prefix of `tag`.
size_t partial_tail(std::string_view s, std::string_view tag) {
  for (size_t len = std::min(s.size(), tag.size() - 1); len > 0; --len) {
    if (s.substr(s.size() - len) == tag.substr(0, len)) return len;
  }
  return 0;
}

}  // namespace

void ReasoningView::emit(std::vector<Piece>& out, std::string text) const {
  if (text.empty()) return;
  if (!out.empty() && out.back().reasoning == reasoning_) {
    out.back().text += text;
  } else {
    out.push_back(Piece{std::move(text), reasoning_});
  }
}

std::vector<ReasoningView::Piece> ReasoningView::push(std::string_view text) {
  std::vector<Piece> out;
  held_.append(text);
  while (true) {
    const std::string_view tag = reasoning_ ? kClose : kOpen;
    const size_t at = held_.find(tag);
    if (at == std::string::npos) break;
    emit(out, held_.substr(0, at));
    held_.erase(0, at + tag.size());
    reasoning_ = !reasoning_;
  }
  const size_t keep = partial_tail(held_, reasoning_ ? kClose : kOpen);
  emit(out, held_.substr(0, held_.size() - keep));
  held_.erase(0, held_.size() - keep);
  return out;
}

std::vector<ReasoningView::Piece> ReasoningView::flush() {
  std::vector<Piece> out;
  emit(out, std::move(held_));
  held_.clear();
  return out;
}

}  // namespace ringctl
