// Byte-level BPE tokenizer for Qwen2-family models, loaded from a Hugging
// Face tokenizer.json (plain or gzip). Immutable after load: every const
// method is safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::tokenizer {

class Tokenizer {
 public:
  // Accepts tokenizer.json or tokenizer.json.gz.
  static Expected<std::shared_ptr<const Tokenizer>> load(const std::filesystem::path& path);
  static Expected<std::shared_ptr<const Tokenizer>> from_json(std::string_view json_text,
                                                              std::string_view source);

  virtual ~Tokenizer() = default;

  // Added tokens in the text (<｜User｜>, <think>, ...) are matched whole,
  // longest first. With parse_special false, tokens marked "special" are
  // encoded as plain text (so user text cannot forge control tokens), while
  // non-special added tokens such as <think> still match, exactly like
  // Hugging Face's encode_special_tokens. Never adds BOS/EOS by itself.
  //
  // Any bytes are accepted: each byte that is not part of valid UTF-8
  // becomes its single-byte token and the valid runs around it are encoded
  // normally, so decode(encode(x)) gives back x (NFC-normalized where the
  // tokenizer asks for it).
  virtual std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const = 0;

  // Concatenated bytes of the tokens (may end in an incomplete UTF-8 sequence
  // when the ids cut one). Ids out of range decode to nothing.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;

  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual int32_t vocab_size() const = 0;  // highest id + 1, added tokens included
  virtual bool is_special(int32_t id) const = 0;
};

// Streaming detokenization: push ids as they are generated, get back only
// complete UTF-8; bytes of a code point split across tokens are held back
// until it completes. flush() returns whatever is left (invalid bytes become
// U+FFFD).
class StreamDecoder {
 public:
  explicit StreamDecoder(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special = false);
  std::string push(int32_t id);
  std::string flush();

 private:
  std::shared_ptr<const Tokenizer> tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace ringserve::tokenizer
