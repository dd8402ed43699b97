#include "tokenizer/pre_tokenizer.h"

#include "tokenizer/utf8.h"

namespace ringserve::tokenizer {

Expected<PreTokenizer> PreTokenizer::create(const std::vector<PreTokenizerStep>& steps) {
  PreTokenizer pt;
  for (const auto& s : steps) {
    Step step;
    if (const auto* split = std::get_if<SplitStep>(&s)) {
      step.regex = RS_TRY(Regex::compile(split->pcre2_pattern));
      step.behavior = split->behavior;
      step.invert = split->invert;
    } else {
      const auto& bl = std::get<ByteLevelStep>(s);
      // Without use_regex a ByteLevel step only maps bytes, which the BPE
      // model does on its own; only the prefix space remains to apply.
      if (!bl.use_regex && !bl.add_prefix_space) continue;
      step.prefix_space = bl.add_prefix_space;
      step.has_regex = bl.use_regex;
      if (bl.use_regex) step.regex = RS_TRY(Regex::compile(kGpt2SplitPattern));
    }
    pt.steps_.push_back(std::move(step));
  }
  return pt;
}

void PreTokenizer::apply(const Step& step, std::string_view piece, Pieces& scratch) const {
  if (step.prefix_space && piece.front() != ' ') {
    scratch.owned.emplace_back();
    std::string& s = scratch.owned.back();
    s.reserve(piece.size() + 1);
    s.push_back(' ');
    s.append(piece);
    piece = s;
  }
  if (!step.has_regex) {
    scratch.next.push_back(piece);
    return;
  }
  // Collect (end, is_match) spans covering the piece, as Hugging Face's
  // find_matches does, then group them according to the behavior.
  auto& bounds = scratch.bounds;
  bounds.clear();
  size_t prev = 0;
  size_t pos = 0;
  while (pos < piece.size()) {
    Regex::Match m;
    const auto r = step.regex.find(piece, pos, &m);
    if (r == Regex::Result::kNoMatch) break;
    if (r == Regex::Result::kError) {
      // A resource limit on hostile input: take one code point as a match
      // and go on, so encoding still covers every byte.
      size_t len = 0;
      utf8::decode(piece, pos, &len);
      m = {pos, pos + len};
    }
    if (m.begin != prev) bounds.emplace_back(m.begin, false);
    bounds.emplace_back(m.end, true);
    prev = m.end;
    if (m.end > pos) {
      pos = m.end;
    } else {  // empty match: step over one code point
      size_t len = 0;
      utf8::decode(piece, pos, &len);
      pos += len;
    }
  }
  if (prev < piece.size()) bounds.emplace_back(piece.size(), false);
  if (step.invert) {
    for (auto& b : bounds) b.second = !b.second;
  }

  size_t begin = 0;
  size_t pending_begin = 0;  // start of a piece still growing (merge behaviors)
  bool have_pending = false;
  bool previous_match = false;
  auto emit = [&](size_t b, size_t e) {
    if (e > b) scratch.next.push_back(piece.substr(b, e - b));
  };
  for (const auto& [end, is_match] : bounds) {
    switch (step.behavior) {
      case SplitBehavior::kRemoved:
        if (!is_match) emit(begin, end);
        break;
      case SplitBehavior::kIsolated:
        emit(begin, end);
        break;
      case SplitBehavior::kMergedWithPrevious:
        // A delimiter joins the piece before it.
        if (is_match && !previous_match && have_pending) {
          // extend the pending piece
        } else {
          if (have_pending) emit(pending_begin, begin);
          pending_begin = begin;
          have_pending = true;
        }
        break;
      case SplitBehavior::kMergedWithNext:
        // A delimiter starts the piece after it.
        if (!(!is_match && previous_match && have_pending)) {
          if (have_pending) emit(pending_begin, begin);
          pending_begin = begin;
          have_pending = true;
        }
        break;
      case SplitBehavior::kContiguous:
        if (!(have_pending && is_match == previous_match)) {
          if (have_pending) emit(pending_begin, begin);
          pending_begin = begin;
          have_pending = true;
        }
        break;
    }
    previous_match = is_match;
    begin = end;
  }
  if (have_pending) emit(pending_begin, begin);
}

void PreTokenizer::split(std::string_view text, Pieces& out) const {
  out.pieces.clear();
  out.owned.clear();
  if (text.empty()) return;
  out.pieces.push_back(text);
  for (const Step& step : steps_) {
    out.next.clear();
    for (const std::string_view piece : out.pieces) apply(step, piece, out);
    out.pieces.swap(out.next);
  }
}

}  // namespace ringserve::tokenizer
