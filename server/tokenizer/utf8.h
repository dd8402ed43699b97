// UTF-8 helpers shared by the tokenizer: validation that tolerates garbage
// (the encoder must accept any bytes) and decoding of single code points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ringserve::tokenizer::utf8 {

// Length of the valid UTF-8 sequence starting at s[pos] (1..4), or 0 when the
// bytes there are not a complete, well-formed sequence (overlong forms,
// surrogates and code points above U+10FFFF are invalid, as in RFC 3629).
size_t valid_sequence_length(std::string_view s, size_t pos);

// True when the bytes at s[pos..] are a proper prefix of some valid sequence
// that was cut by the end of the string (more bytes could complete it).
bool is_truncated_prefix(std::string_view s, size_t pos);

// Decodes the valid sequence at s[pos] (caller checked it); returns the code
// point and stores its length in *len.
char32_t decode(std::string_view s, size_t pos, size_t* len);

void append(std::string& out, char32_t cp);

// U+FFFD, appended where bytes cannot be decoded.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Rust's char::is_whitespace (the Unicode White_Space property), which is
// what Hugging Face uses for lstrip/rstrip of added tokens.
bool is_white_space(char32_t cp);

}  // namespace ringserve::tokenizer::utf8
