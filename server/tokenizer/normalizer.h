// Unicode normalization (NFC and friends) through utf8proc. Text made only
// of code points below U+0300 is already NFC (none of them decomposes or
// combines with a predecessor), which lets most Latin text skip the work.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer_spec.h"

namespace ringserve::tokenizer {

// `text` must be valid UTF-8. Returns a view of `text` itself when nothing
// changes, otherwise a view of `scratch`, which holds the normalized bytes.
std::string_view normalize(std::span<const NormalForm> forms, std::string_view text,
                           std::string& scratch);

}  // namespace ringserve::tokenizer
