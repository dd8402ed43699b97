#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace ringserve::tokenizer::byte_level {

namespace {

// Printable Latin-1 bytes spell themselves; the other 68 bytes are moved to
// U+0100.. in byte order. The largest code point used is U+0143.
constexpr char32_t kMaxChar = 0x143;

struct Tables {
  std::array<char32_t, 256> char_of{};
  std::array<int16_t, kMaxChar + 1> byte_of{};

  Tables() {
    byte_of.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      char_of[b] = c;
      byte_of[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t char_of_byte(uint8_t b) {
  return tables().char_of[b];
}

std::optional<uint8_t> byte_of_char(char32_t cp) {
  if (cp > kMaxChar) return std::nullopt;
  const int16_t b = tables().byte_of[cp];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::optional<std::string> to_bytes(std::string_view spelled) {
  std::string out;
  out.reserve(spelled.size());
  for (size_t pos = 0; pos < spelled.size();) {
    const size_t n = utf8::valid_sequence_length(spelled, pos);
    if (n == 0) return std::nullopt;
    size_t len = 0;
    const char32_t cp = utf8::decode(spelled, pos, &len);
    const auto b = byte_of_char(cp);
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
    pos += n;
  }
  return out;
}

std::string to_spelling(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8::append(out, char_of_byte(static_cast<uint8_t>(c)));
  return out;
}

}  // namespace ringserve::tokenizer::byte_level
