#include "tokenizer/chat_template.h"

namespace ringserve::tokenizer {

namespace {

constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
constexpr std::string_view kUser = "<｜User｜>";
constexpr std::string_view kAssistant = "<｜Assistant｜>";
constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

// Jinja's content.split('</think>')[-1]: the text after the last marker.
std::string_view after_last_think(std::string_view content) {
  const size_t at = content.rfind(kThinkClose);
  if (at == std::string_view::npos) return content;
  return content.substr(at + kThinkClose.size());
}

std::string_view trim(std::string_view s) {
  const auto not_space = [](char c) { return c != ' ' && c != '\n' && c != '\t' && c != '\r'; };
  while (!s.empty() && !not_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && !not_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

// Mirrors the Jinja template shipped in DeepSeek-R1-Distill-Qwen-7B's
// tokenizer_config.json for system, user and assistant turns: the last
// system message goes right after BOS, users open with <｜User｜>, earlier
// assistant replies keep only what follows their last </think> and close
// with <｜end▁of▁sentence｜>, and the generation prompt opens the reasoning.
Expected<std::string> render_chat(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt) {
  if (messages.empty()) {
    return make_error(Errc::kInvalidArgument, "chat: the conversation is empty");
  }
  std::string_view system;
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& role = messages[i].role;
    if (role == "system") {
      system = messages[i].content;
    } else if (role != "user" && role != "assistant") {
      return make_error(Errc::kInvalidArgument,
                        "chat: message {} has role \"{}\" (expected system, user or assistant)", i,
                        role);
    }
  }
  std::string out;
  out.append(kBos).append(system);
  for (const auto& m : messages) {
    if (m.role == "user") {
      out.append(kUser).append(m.content);
    } else if (m.role == "assistant") {
      out.append(kAssistant).append(after_last_think(m.content)).append(kEos);
    }
  }
  if (add_generation_prompt) out.append(kAssistant).append(kThinkOpen).append("\n");
  return out;
}

ReasoningSplit split_reasoning(std::string_view reply) {
  std::string_view body = reply;
  // The prompt already opened <think>, but a model may repeat it.
  if (const auto lead = trim(body); lead.substr(0, kThinkOpen.size()) == kThinkOpen) {
    body = lead.substr(kThinkOpen.size());
  }
  const size_t close = body.find(kThinkClose);
  if (close == std::string_view::npos) return {std::string(trim(body)), std::string()};
  return {std::string(trim(body.substr(0, close))),
          std::string(trim(body.substr(close + kThinkClose.size())))};
}

}  // namespace ringserve::tokenizer
