#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace ringserve::tokenizer {

struct BpeTokenizer::Scratch {
  std::string normalized;
  PreTokenizer::Pieces pieces;
};

BpeTokenizer::BpeTokenizer(TokenizerSpec spec, BpeModel bpe, PreTokenizer pre)
    : spec_(std::move(spec)), bpe_(std::move(bpe)), pre_(std::move(pre)) {}

Expected<std::shared_ptr<const BpeTokenizer>> BpeTokenizer::create(TokenizerSpec spec,
                                                                   std::string_view source) {
  BpeModel bpe = RS_TRY(BpeModel::build(spec, source));
  PreTokenizer pre = RS_TRY([&]() -> Expected<PreTokenizer> {
    auto p = PreTokenizer::create(spec.pre_tokenizers);
    if (!p) return with_context(std::move(p).error(), fmt::format("{}: pre_tokenizer", source));
    return p;
  }());
  auto tok = std::make_shared<BpeTokenizer>(std::move(spec), std::move(bpe), std::move(pre));
  RS_TRY_STATUS(tok->build_tables(source));
  return std::shared_ptr<const BpeTokenizer>(std::move(tok));
}

Status BpeTokenizer::build_tables(std::string_view source) {
  int64_t max_id = -1;
  for (const auto& [spelled, id] : spec_.vocab) max_id = std::max<int64_t>(max_id, id);
  for (const auto& a : spec_.added_tokens) max_id = std::max<int64_t>(max_id, a.id);
  vocab_size_ = static_cast<int32_t>(max_id + 1);

  // Each id's bytes: the byte-level spelling mapped back to bytes, or the
  // raw UTF-8 when a token is not spelled in that alphabet. Added tokens
  // take precedence over a vocab entry with the same id.
  std::vector<const std::string*> text_of(static_cast<size_t>(vocab_size_), nullptr);
  for (const auto& [spelled, id] : spec_.vocab) text_of[static_cast<size_t>(id)] = &spelled;
  special_.assign(static_cast<size_t>(vocab_size_), false);
  std::vector<bool> seen_added(static_cast<size_t>(vocab_size_), false);
  for (const auto& a : spec_.added_tokens) {
    const auto id = static_cast<size_t>(a.id);
    if (seen_added[id]) {
      return make_error(Errc::kCorruptData, "{}: added token id {} appears twice", source, a.id);
    }
    seen_added[id] = true;
    text_of[id] = &a.content;
    special_[id] = a.special;
    added_to_id_[a.content] = a.id;
  }
  token_offset_.assign(static_cast<size_t>(vocab_size_) + 1, 0);
  for (size_t id = 0; id < text_of.size(); ++id) {
    token_offset_[id] = static_cast<uint32_t>(token_bytes_.size());
    if (!text_of[id]) continue;
    if (auto bytes = byte_level::to_bytes(*text_of[id])) {
      token_bytes_ += *bytes;
    } else {
      token_bytes_ += *text_of[id];
    }
    if (token_bytes_.size() > UINT32_MAX / 2) {
      return make_error(Errc::kTooLarge, "{}: token strings are too large", source);
    }
  }
  token_offset_.back() = static_cast<uint32_t>(token_bytes_.size());

  std::vector<size_t> raw, normalized;
  std::vector<std::string> raw_patterns;
  for (size_t i = 0; i < spec_.added_tokens.size(); ++i) {
    const auto& a = spec_.added_tokens[i];
    if (a.normalized && !spec_.normalizers.empty()) {
      // Matched in normalized text, so the pattern is normalized too.
      std::string scratch;
      normalized.push_back(i);
      normalized_patterns_.emplace_back(normalize(spec_.normalizers, a.content, scratch));
    } else {
      raw.push_back(i);
      raw_patterns.push_back(a.content);
    }
  }
  raw_matcher_.build(spec_.added_tokens, raw, raw_patterns);
  normalized_matcher_.build(spec_.added_tokens, normalized, normalized_patterns_);

  // The vocab and merges now live in the BPE model; drop the copies.
  spec_.vocab.clear();
  spec_.vocab.shrink_to_fit();
  spec_.merges.clear();
  spec_.merges.shrink_to_fit();
  return ok();
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  thread_local Scratch scratch;
  encode_raw(text, parse_special, scratch, out);
  return out;
}

void BpeTokenizer::encode_raw(std::string_view text, bool parse_special, Scratch& s,
                              std::vector<int32_t>& out) const {
  raw_matcher_.split(
      text, !parse_special,
      [&](std::string_view run) {
        // Valid stretches are tokenized normally; each invalid byte becomes
        // its single-byte token.
        size_t start = 0;
        size_t pos = 0;
        while (pos < run.size()) {
          if (static_cast<uint8_t>(run[pos]) < 0x80) {
            ++pos;
            continue;
          }
          const size_t n = utf8::valid_sequence_length(run, pos);
          if (n > 0) {
            pos += n;
            continue;
          }
          if (pos > start) encode_valid(run.substr(start, pos - start), parse_special, s, out);
          const int32_t id = bpe_.byte_token(static_cast<uint8_t>(run[pos]));
          if (id >= 0) out.push_back(id);
          start = ++pos;
        }
        if (pos > start) encode_valid(run.substr(start, pos - start), parse_special, s, out);
      },
      [&](int32_t id) { out.push_back(id); });
}

void BpeTokenizer::encode_valid(std::string_view text, bool parse_special, Scratch& s,
                                std::vector<int32_t>& out) const {
  const std::string_view normalized = normalize(spec_.normalizers, text, s.normalized);
  if (normalized_matcher_.empty()) {
    encode_normalized(normalized, s, out);
    return;
  }
  // encode_normalized touches only s.pieces, so `normalized` (which may live
  // in s.normalized) stays intact while the matcher walks it.
  normalized_matcher_.split(
      normalized, !parse_special, [&](std::string_view run) { encode_normalized(run, s, out); },
      [&](int32_t id) { out.push_back(id); });
}

void BpeTokenizer::encode_normalized(std::string_view text, Scratch& s,
                                     std::vector<int32_t>& out) const {
  pre_.split(text, s.pieces);
  for (const std::string_view piece : s.pieces.pieces) bpe_.encode_piece(piece, out);
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocab_size_) continue;
    const auto i = static_cast<size_t>(id);
    if (skip_special && special_[i]) continue;
    out.append(token_bytes_, token_offset_[i], token_offset_[i + 1] - token_offset_[i]);
  }
  return out;
}

std::optional<int32_t> BpeTokenizer::token_to_id(std::string_view token) const {
  const std::string key(token);
  if (const auto it = added_to_id_.find(key); it != added_to_id_.end()) return it->second;
  const auto& vocab = bpe_.spelled_to_id();
  if (const auto it = vocab.find(key); it != vocab.end()) return it->second;
  return std::nullopt;
}

bool BpeTokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size_ && special_[static_cast<size_t>(id)];
}

}  // namespace ringserve::tokenizer
