#include "scheduler/stop_matcher.h"

#include <algorithm>

namespace ringserve::serve {

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {
  // An empty stop string would match before any text; callers validate, and
  // this keeps the matcher total if one slips through.
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopMatcher::Result StopMatcher::push(std::string_view piece) {
  Result result;
  if (matched_) return result;
  held_.append(piece);
  if (stops_.empty()) {
    result.text = std::move(held_);
    held_.clear();
    return result;
  }

  // Earliest match wins; at the same position, the first stop string listed.
  size_t best_pos = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t pos = held_.find(stops_[i]);
    if (pos < best_pos) {
      best_pos = pos;
      result.matched = i;
    }
  }
  if (result.matched) {
    matched_ = true;
    result.text = held_.substr(0, best_pos);
    held_.clear();
    return result;
  }

  // Keep the longest tail that is a proper prefix of some stop string. That
  // tail starts where a stop string starts, so the cut is at a UTF-8
  // boundary whenever the held text is complete UTF-8.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    const size_t longest = std::min(stop.size() - 1, held_.size());
    for (size_t len = longest; len > keep; --len) {
      if (std::string_view(held_).substr(held_.size() - len) ==
          std::string_view(stop).substr(0, len)) {
        keep = len;
        break;
      }
    }
  }
  result.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return result;
}

std::string StopMatcher::flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace ringserve::serve
