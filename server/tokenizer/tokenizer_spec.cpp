#include "tokenizer/tokenizer_spec.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <unordered_set>

namespace ringserve::tokenizer {

namespace {

using nlohmann::json;

// nlohmann builds the document recursively; bounding the nesting first keeps
// a hostile file ("[[[[...") from exhausting the stack.
constexpr int kMaxJsonDepth = 64;

Status check_depth(std::string_view text, std::string_view source) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return make_error(Errc::kCorruptData, "{}: JSON nested deeper than {}", source,
                          kMaxJsonDepth);
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return ok();
}

Expected<bool> optional_bool(const json& obj, const char* key, bool fallback,
                             std::string_view where) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return make_error(Errc::kCorruptData, "{}: \"{}\" must be a boolean", where, key);
  }
  return it->get<bool>();
}

Expected<int32_t> token_id(const json& value, std::string_view where) {
  if (!value.is_number_integer()) {
    return make_error(Errc::kCorruptData, "{}: id must be an integer", where);
  }
  if (value.is_number_unsigned()) {
    const auto u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(kMaxTokenId)) {
      return make_error(Errc::kCorruptData, "{}: id {} is above the limit {}", where, u,
                        kMaxTokenId);
    }
    return static_cast<int32_t>(u);
  }
  const auto v = value.get<int64_t>();
  if (v < 0 || v > kMaxTokenId) {
    return make_error(Errc::kCorruptData, "{}: id {} is out of range [0, {}]", where, v,
                      kMaxTokenId);
  }
  return static_cast<int32_t>(v);
}

Status parse_model(const json& doc, TokenizerSpec& spec, std::string_view source) {
  const auto it = doc.find("model");
  if (it == doc.end() || !it->is_object()) {
    return make_error(Errc::kCorruptData, "{}: missing \"model\" object", source);
  }
  const json& model = *it;
  const std::string where = fmt::format("{}: model", source);
  if (const auto t = model.find("type"); t != model.end() && !t->is_null()) {
    if (!t->is_string()) return make_error(Errc::kCorruptData, "{}: type must be a string", where);
    if (t->get<std::string>() != "BPE") {
      return make_error(Errc::kUnsupported, "{}: type \"{}\" (only BPE is implemented)", where,
                        t->get<std::string>());
    }
  }
  if (const auto d = model.find("dropout"); d != model.end() && !d->is_null()) {
    if (!d->is_number() || d->get<double>() != 0.0) {
      return make_error(Errc::kUnsupported, "{}: BPE dropout is not supported", where);
    }
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (const auto k = model.find(key); k != model.end() && !k->is_null()) {
      if (!k->is_string()) {
        return make_error(Errc::kCorruptData, "{}: \"{}\" must be a string", where, key);
      }
      if (!k->get<std::string>().empty()) {
        return make_error(Errc::kUnsupported, "{}: \"{}\" is not supported", where, key);
      }
    }
  }
  const bool byte_fallback = RS_TRY(optional_bool(model, "byte_fallback", false, where));
  if (byte_fallback) {
    return make_error(Errc::kUnsupported, "{}: byte_fallback is not supported", where);
  }
  spec.ignore_merges = RS_TRY(optional_bool(model, "ignore_merges", false, where));

  const auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) {
    return make_error(Errc::kCorruptData, "{}: missing \"vocab\" object", where);
  }
  if (vocab->empty()) return make_error(Errc::kCorruptData, "{}: vocab is empty", where);
  spec.vocab.reserve(vocab->size());
  std::unordered_set<int32_t> seen;
  seen.reserve(vocab->size());
  for (const auto& [token, value] : vocab->items()) {
    const std::string token_where = fmt::format("{}: vocab \"{}\"", where, token);
    const int32_t id = RS_TRY(token_id(value, token_where));
    if (!seen.insert(id).second) {
      return make_error(Errc::kCorruptData, "{}: id {} is used twice", token_where, id);
    }
    spec.vocab.emplace_back(token, id);
  }

  const auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) {
    return make_error(Errc::kCorruptData, "{}: missing \"merges\" array", where);
  }
  spec.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    if (m.is_string()) {
      // Legacy form "a b": the first space separates the pair.
      const auto& s = m.get_ref<const std::string&>();
      const auto space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == s.size()) {
        return make_error(Errc::kCorruptData, "{}: merge {} \"{}\" is not \"left right\"", where, i,
                          s);
      }
      spec.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return make_error(Errc::kCorruptData, "{}: merge {} is neither \"a b\" nor [\"a\", \"b\"]",
                        where, i);
    }
  }
  return ok();
}

Status parse_added_tokens(const json& doc, TokenizerSpec& spec, std::string_view source) {
  const auto it = doc.find("added_tokens");
  if (it == doc.end() || it->is_null()) return ok();
  if (!it->is_array()) {
    return make_error(Errc::kCorruptData, "{}: \"added_tokens\" must be an array", source);
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string where = fmt::format("{}: added_tokens[{}]", source, i);
    if (!t.is_object()) return make_error(Errc::kCorruptData, "{}: not an object", where);
    AddedTokenSpec a;
    const auto id = t.find("id");
    if (id == t.end()) return make_error(Errc::kCorruptData, "{}: missing \"id\"", where);
    a.id = RS_TRY(token_id(*id, where));
    const auto content = t.find("content");
    if (content == t.end() || !content->is_string() ||
        content->get_ref<const std::string&>().empty()) {
      return make_error(Errc::kCorruptData, "{}: \"content\" must be a non-empty string", where);
    }
    a.content = content->get<std::string>();
    a.special = RS_TRY(optional_bool(t, "special", false, where));
    a.single_word = RS_TRY(optional_bool(t, "single_word", false, where));
    a.lstrip = RS_TRY(optional_bool(t, "lstrip", false, where));
    a.rstrip = RS_TRY(optional_bool(t, "rstrip", false, where));
    // Hugging Face's default: special tokens match raw text, others normalized text.
    a.normalized = RS_TRY(optional_bool(t, "normalized", !a.special, where));
    spec.added_tokens.push_back(std::move(a));
  }
  return ok();
}

Status parse_normalizer(const json& n, TokenizerSpec& spec, std::string_view where) {
  if (n.is_null()) return ok();
  if (!n.is_object() || !n.contains("type") || !n["type"].is_string()) {
    return make_error(Errc::kCorruptData, "{}: normalizer without a \"type\"", where);
  }
  const auto type = n["type"].get<std::string>();
  if (type == "NFC")
    spec.normalizers.push_back(NormalForm::kNFC);
  else if (type == "NFD")
    spec.normalizers.push_back(NormalForm::kNFD);
  else if (type == "NFKC")
    spec.normalizers.push_back(NormalForm::kNFKC);
  else if (type == "NFKD")
    spec.normalizers.push_back(NormalForm::kNFKD);
  else if (type == "Sequence") {
    const auto list = n.find("normalizers");
    if (list == n.end() || !list->is_array()) {
      return make_error(Errc::kCorruptData, "{}: Sequence without \"normalizers\"", where);
    }
    for (const auto& child : *list) RS_TRY_STATUS(parse_normalizer(child, spec, where));
  } else {
    return make_error(Errc::kUnsupported, "{}: normalizer \"{}\" is not supported", where, type);
  }
  return ok();
}

// A literal split string becomes a pattern that matches exactly it.
std::string escape_literal(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

Expected<SplitBehavior> parse_behavior(const json& p, std::string_view where) {
  const auto b = p.find("behavior");
  if (b == p.end() || !b->is_string()) {
    return make_error(Errc::kCorruptData, "{}: Split without \"behavior\"", where);
  }
  const auto s = b->get<std::string>();
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  return make_error(Errc::kCorruptData, "{}: unknown Split behavior \"{}\"", where, s);
}

Status parse_pre_tokenizer(const json& p, TokenizerSpec& spec, std::string_view where) {
  if (p.is_null()) return ok();
  if (!p.is_object() || !p.contains("type") || !p["type"].is_string()) {
    return make_error(Errc::kCorruptData, "{}: pre_tokenizer without a \"type\"", where);
  }
  const auto type = p["type"].get<std::string>();
  if (type == "Sequence") {
    const auto list = p.find("pretokenizers");
    if (list == p.end() || !list->is_array()) {
      return make_error(Errc::kCorruptData, "{}: Sequence without \"pretokenizers\"", where);
    }
    for (const auto& child : *list) RS_TRY_STATUS(parse_pre_tokenizer(child, spec, where));
    return ok();
  }
  if (type == "ByteLevel") {
    ByteLevelStep step;
    step.add_prefix_space = RS_TRY(optional_bool(p, "add_prefix_space", false, where));
    step.use_regex = RS_TRY(optional_bool(p, "use_regex", true, where));
    spec.pre_tokenizers.emplace_back(step);
    return ok();
  }
  if (type == "Split") {
    SplitStep step;
    const auto pattern = p.find("pattern");
    if (pattern == p.end() || !pattern->is_object()) {
      return make_error(Errc::kCorruptData, "{}: Split without a \"pattern\" object", where);
    }
    if (const auto r = pattern->find("Regex"); r != pattern->end() && r->is_string()) {
      step.pcre2_pattern = r->get<std::string>();
    } else if (const auto s = pattern->find("String"); s != pattern->end() && s->is_string()) {
      step.pcre2_pattern = escape_literal(s->get_ref<const std::string&>());
    } else {
      return make_error(Errc::kCorruptData, "{}: Split pattern needs \"Regex\" or \"String\"",
                        where);
    }
    if (step.pcre2_pattern.empty()) {
      return make_error(Errc::kCorruptData, "{}: Split pattern is empty", where);
    }
    step.behavior = RS_TRY(parse_behavior(p, where));
    step.invert = RS_TRY(optional_bool(p, "invert", false, where));
    spec.pre_tokenizers.emplace_back(std::move(step));
    return ok();
  }
  return make_error(Errc::kUnsupported, "{}: pre_tokenizer \"{}\" is not supported", where, type);
}

Status check_decoder(const json& doc, std::string_view source) {
  const auto d = doc.find("decoder");
  if (d == doc.end() || d->is_null()) return ok();
  if (!d->is_object() || !d->contains("type") || !(*d)["type"].is_string()) {
    return make_error(Errc::kCorruptData, "{}: decoder without a \"type\"", source);
  }
  const auto type = (*d)["type"].get<std::string>();
  if (type != "ByteLevel") {
    return make_error(Errc::kUnsupported, "{}: decoder \"{}\" (only ByteLevel is implemented)",
                      source, type);
  }
  return ok();
}

}  // namespace

Expected<TokenizerSpec> parse_tokenizer_json(std::string_view json_text, std::string_view source) {
  RS_TRY_STATUS(check_depth(json_text, source));
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    return make_error(Errc::kCorruptData, "{}: invalid JSON: {}", source, e.what());
  }
  if (!doc.is_object()) return make_error(Errc::kCorruptData, "{}: not a JSON object", source);
  TokenizerSpec spec;
  RS_TRY_STATUS(parse_model(doc, spec, source));
  RS_TRY_STATUS(parse_added_tokens(doc, spec, source));
  if (const auto n = doc.find("normalizer"); n != doc.end()) {
    RS_TRY_STATUS(parse_normalizer(*n, spec, fmt::format("{}: normalizer", source)));
  }
  if (const auto p = doc.find("pre_tokenizer"); p != doc.end()) {
    RS_TRY_STATUS(parse_pre_tokenizer(*p, spec, fmt::format("{}: pre_tokenizer", source)));
  }
  RS_TRY_STATUS(check_decoder(doc, source));
  return spec;
}

}  // namespace ringserve::tokenizer
