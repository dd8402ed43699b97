// libFuzzer: the lspci dump parser, the -vv text parser and the config
// decoder on arbitrary bytes. The first byte picks how the rest is used.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "preflight/config_decoder.h"
#include "preflight/dump_parser.h"
#include "preflight/vv_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringserve::preflight;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto dump = parse_lspci_dump(text);
      if (dump) {
        for (const auto& d : dump->devices) (void)decode_config(d.config(), d.bdf);
        (void)parse_lspci_dump(to_lspci_dump(*dump));
      }
      break;
    }
    case 1:
      (void)parse_lspci_vv(text);
      break;
    default: {
      // Raw config bytes; odd bytes of a second half say which are known.
      const size_t n = (size - 1) / 2;
      (void)decode_config(ConfigBytes(std::span(data + 1, size - 1)), "fuzz");
      if (n > 0)
        (void)decode_config(ConfigBytes(std::span(data + 1, n), std::span(data + 1 + n, n)));
      break;
    }
  }
  return 0;
}
