#include "offload/strategy.h"

namespace ringserve::offload {

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kStream:
      return "stream";
    case Strategy::kZeroCopy:
      return "zerocopy";
  }
  return "?";
}

const char* offload_mode_name(OffloadMode m) {
  switch (m) {
    case OffloadMode::kStream:
      return "stream";
    case OffloadMode::kZeroCopy:
      return "zerocopy";
    case OffloadMode::kAuto:
      return "auto";
  }
  return "?";
}

Expected<OffloadMode> parse_offload_mode(std::string_view text) {
  if (text == "stream") return OffloadMode::kStream;
  if (text == "zerocopy" || text == "zero-copy") return OffloadMode::kZeroCopy;
  if (text == "auto") return OffloadMode::kAuto;
  return make_error(Errc::kInvalidArgument,
                    "--offload '{}': expected one of stream, zerocopy, auto", text);
}

}  // namespace ringserve::offload
