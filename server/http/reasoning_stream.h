// Splits a streamed DeepSeek-R1 reply into reasoning and answer. The chat
// template opens the assistant turn with "<think>\n", so generation starts
// inside the reasoning; everything up to "</think>" is reasoning_content,
// the rest is content. Text that might be the start of a split "</think>"
// is held back until the next delta decides it.
#pragma once

#include <string>
#include <string_view>

namespace ringserve::http {

class ReasoningStream {
 public:
  struct Delta {
    std::string reasoning;
    std::string content;
  };

  explicit ReasoningStream(bool starts_in_reasoning = true) : in_reasoning_(starts_in_reasoning) {}

  Delta push(std::string_view text);
  Delta flush();  // end of generation: release whatever is held back

 private:
  bool in_reasoning_;
  bool at_start_ = true;     // a leading "<think>" from the model is dropped
  bool after_close_ = true;  // newlines right after "</think>" are dropped
  std::string held_;
};

}  // namespace ringserve::http
