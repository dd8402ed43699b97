// The Tokenizer implementation: added-token extraction, then per plain run
// UTF-8 validation, normalization, pre-tokenization and byte-level BPE.
//
// Invalid UTF-8 in the input (Hugging Face only ever sees valid strings) is
// not an error: each byte that is not part of a valid sequence becomes its
// own single-byte token, and the valid runs around it are tokenized as
// usual. decode() of the result gives back the input bytes (with the valid
// runs normalized), so nothing is lost and nothing crashes.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringserve/common/expected.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_spec.h"

namespace ringserve::tokenizer {

class BpeTokenizer final : public Tokenizer {
 public:
  static Expected<std::shared_ptr<const BpeTokenizer>> create(TokenizerSpec spec,
                                                              std::string_view source);

  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  bool is_special(int32_t id) const override;

  BpeTokenizer(TokenizerSpec spec, BpeModel bpe, PreTokenizer pre);

 private:
  struct Scratch;
  void encode_raw(std::string_view text, bool parse_special, Scratch& s,
                  std::vector<int32_t>& out) const;
  void encode_valid(std::string_view text, bool parse_special, Scratch& s,
                    std::vector<int32_t>& out) const;
  void encode_normalized(std::string_view text, Scratch& s, std::vector<int32_t>& out) const;
  Status build_tables(std::string_view source);

  TokenizerSpec spec_;  // added tokens and normalizers; vocab/merges are released
  BpeModel bpe_;
  PreTokenizer pre_;
  AddedTokenMatcher raw_matcher_;         // tokens with normalized=false
  AddedTokenMatcher normalized_matcher_;  // tokens with normalized=true
  std::vector<std::string> normalized_patterns_;
  std::unordered_map<std::string, int32_t> added_to_id_;
  std::string token_bytes_;             // every token's decoded bytes, back to back
  std::vector<uint32_t> token_offset_;  // vocab_size_ + 1 offsets into token_bytes_
  std::vector<bool> special_;
  int32_t vocab_size_ = 0;
};

}  // namespace ringserve::tokenizer
