// Stop strings over streamed text. Text arrives in pieces (one per token);
// a stop string may straddle pieces, so the tail that could still grow into
// a stop string is held back until the next piece decides it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringserve::serve {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stop_strings);

  struct Result {
    std::string text;               // safe to emit now
    std::optional<size_t> matched;  // index into the stop strings
  };

  // Appends `piece`. On a match, `text` ends right before the stop string
  // and everything after it is dropped; the caller finishes the request.
  Result push(std::string_view piece);

  // Releases the held-back tail (the request ended for another reason).
  std::string flush();

  const std::string& stop_string(size_t index) const { return stops_[index]; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool matched_ = false;
};

}  // namespace ringserve::serve
