#include "ringserve/protocol/messages.h"

namespace ringserve::protocol {

const char* finish_reason_name(FinishReason reason) noexcept {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "?";
}

const char* message_name(const Message& message) noexcept {
  static constexpr const char* kNames[] = {
      "Hello", "HelloAck",     "GenerateRequest", "Cancel", "TokenEvent", "Done",
      "Error", "StatsRequest", "Stats",           "Ping",   "Pong"};
  static_assert(std::size(kNames) == std::variant_size_v<Message>);
  return kNames[message.index()];
}

}  // namespace ringserve::protocol
