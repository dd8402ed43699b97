// The DeepSeek-R1-Distill chat template, rendered in C++ (no Jinja):
//   <｜begin▁of▁sentence｜>{system}<｜User｜>{user}<｜Assistant｜>{reply}<｜end▁of▁sentence｜>...
// with the generation prompt "<｜Assistant｜><think>\n". Earlier assistant
// turns keep only the text after "</think>", as the model's own template does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::tokenizer {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// Errors: kInvalidArgument for an unknown role or an empty conversation.
Expected<std::string> render_chat(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt = true);

// Splits a generated reply into its reasoning ("<think>...</think>") and the
// answer after it. A reply still inside its reasoning has an empty answer.
struct ReasoningSplit {
  std::string reasoning;
  std::string content;
};
ReasoningSplit split_reasoning(std::string_view reply);

}  // namespace ringserve::tokenizer
