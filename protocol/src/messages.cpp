#include "ringserve/protocol/messages.h"

namespace ringserve::protocol {

const char* message_name(const Message& message) noexcept {
  static constexpr const char* kNames[] = {
      "Hello", "HelloAck",     "GenerateRequest", "Cancel", "TokenEvent", "Done",
      "Error", "StatsRequest", "Stats",           "Ping",   "Pong"};
  static_assert(std::size(kNames) == std::variant_size_v<Message>);
  return kNames[message.index()];
}

}  // namespace ringserve::protocol
