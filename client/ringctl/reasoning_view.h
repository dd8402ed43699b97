// Splits a streamed reply into reasoning ("<think> ... </think>") and
// answer as it arrives. Tags may straddle pieces, so a tail that could be
// the start of a tag is held back until the next piece decides it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ringctl {

class ReasoningView {
 public:
  // DeepSeek-R1's generation prompt already opens "<think>\n", so a reply
  // usually starts inside its reasoning.
  explicit ReasoningView(bool starts_in_reasoning) : reasoning_(starts_in_reasoning) {}

  struct Piece {
    std::string text;
    bool reasoning = false;
  };
  std::vector<Piece> push(std::string_view text);
  std::vector<Piece> flush();

 private:
  void emit(std::vector<Piece>& out, std::string text) const;

  bool reasoning_;
  std::string held_;
};

}  // namespace ringctl
