// The byte-level alphabet of GPT-2 style BPE: every byte 0..255 is spelled as
// one printable code point, so vocab and merges can be stored as text. The
// tokenizer works on raw bytes internally and uses this only at load time
// (spelling -> bytes) and for token_to_id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringserve::tokenizer::byte_level {

// The code point that spells byte b.
char32_t char_of_byte(uint8_t b);

// The byte spelled by code point cp, if cp belongs to the alphabet.
std::optional<uint8_t> byte_of_char(char32_t cp);

// "Ġhello" -> " hello". Returns nullopt when some code point is outside the
// alphabet (added tokens such as "<｜User｜>"), which callers then keep as
// their raw UTF-8, exactly like the Hugging Face ByteLevel decoder.
std::optional<std::string> to_bytes(std::string_view spelled);

// " hello" -> "Ġhello".
std::string to_spelling(std::string_view bytes);

}  // namespace ringserve::tokenizer::byte_level
