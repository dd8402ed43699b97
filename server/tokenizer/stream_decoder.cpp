#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace ringserve::tokenizer {

namespace {

// Moves every complete sequence of `pending` to the result; invalid bytes
// become U+FFFD (one per maximal invalid prefix, like from_utf8_lossy), and
// a sequence cut by the end of the buffer stays in `pending`.
std::string drain(std::string& pending, bool final) {
  std::string out;
  size_t pos = 0;
  while (pos < pending.size()) {
    const size_t n = utf8::valid_sequence_length(pending, pos);
    if (n > 0) {
      out.append(pending, pos, n);
      pos += n;
      continue;
    }
    if (!final && utf8::is_truncated_prefix(pending, pos)) break;
    size_t bad = 1;
    for (size_t k = 3; k >= 2; --k) {
      if (pos + k <= pending.size() &&
          utf8::is_truncated_prefix(std::string_view(pending).substr(0, pos + k), pos)) {
        bad = k;
        break;
      }
    }
    out.append(utf8::kReplacement);
    pos += bad;
  }
  pending.erase(0, pos);
  return out;
}

}  // namespace

StreamDecoder::StreamDecoder(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special)
    : tokenizer_(std::move(tokenizer)), skip_special_(skip_special) {}

std::string StreamDecoder::push(int32_t id) {
  pending_ += tokenizer_->decode(std::span<const int32_t>(&id, 1), skip_special_);
  return drain(pending_, false);
}

std::string StreamDecoder::flush() {
  return drain(pending_, true);
}

}  // namespace ringserve::tokenizer
