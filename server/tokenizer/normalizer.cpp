#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <vector>

namespace ringserve::tokenizer {

namespace {

// Below U+0300 (UTF-8 lead byte 0xCC) nothing changes under NFC; the other
// forms decompose Latin-1 letters or symbols, so only ASCII is safe there.
bool trivially_normalized(std::span<const NormalForm> forms, std::string_view text) {
  unsigned char limit = 0xCC;
  for (const NormalForm f : forms) {
    if (f != NormalForm::kNFC) limit = 0x80;
  }
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= limit) return false;
  }
  return true;
}

utf8proc_option_t options_for(NormalForm form) {
  const int base = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNFC:
      return static_cast<utf8proc_option_t>(base | UTF8PROC_COMPOSE);
    case NormalForm::kNFD:
      return static_cast<utf8proc_option_t>(base | UTF8PROC_DECOMPOSE);
    case NormalForm::kNFKC:
      return static_cast<utf8proc_option_t>(base | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case NormalForm::kNFKD:
      return static_cast<utf8proc_option_t>(base | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  return static_cast<utf8proc_option_t>(base | UTF8PROC_COMPOSE);
}

// utf8proc_map would malloc per call; decomposing into a reused per-thread
// buffer keeps the hot path allocation-free.
void apply(NormalForm form, std::string_view in, std::string& out) {
  thread_local std::vector<utf8proc_int32_t> buffer;
  const utf8proc_option_t opts = options_for(form);
  const auto* src = reinterpret_cast<const utf8proc_uint8_t*>(in.data());
  const auto len = static_cast<utf8proc_ssize_t>(in.size());
  if (buffer.size() < in.size() + 8) buffer.resize(in.size() + 8);
  utf8proc_ssize_t n = utf8proc_decompose(src, len, buffer.data(),
                                          static_cast<utf8proc_ssize_t>(buffer.size()), opts);
  if (n > static_cast<utf8proc_ssize_t>(buffer.size())) {
    buffer.resize(static_cast<size_t>(n));
    n = utf8proc_decompose(src, len, buffer.data(), n, opts);
  }
  if (n < 0) {
    // Only invalid UTF-8 fails here, and callers pass validated text; keep
    // the input unchanged rather than lose it.
    out.assign(in);
    return;
  }
  // Composes in place and re-encodes as UTF-8 into the same buffer (each
  // code point takes at most 4 bytes, the size of its int32 slot).
  n = utf8proc_reencode(buffer.data(), n, opts);
  if (n < 0) {
    out.assign(in);
    return;
  }
  out.assign(reinterpret_cast<const char*>(buffer.data()), static_cast<size_t>(n));
}

}  // namespace

std::string_view normalize(std::span<const NormalForm> forms, std::string_view text,
                           std::string& scratch) {
  if (forms.empty() || trivially_normalized(forms, text)) return text;
  std::string_view current = text;
  std::string tmp;
  for (const NormalForm form : forms) {
    apply(form, current, tmp);
    scratch.swap(tmp);
    current = scratch;
  }
  if (current == text) return text;
  return current;
}

}  // namespace ringserve::tokenizer
