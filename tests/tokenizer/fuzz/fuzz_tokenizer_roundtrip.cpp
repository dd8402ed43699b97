// Encode/decode round trip on arbitrary bytes with the Qwen2 tokenizer.
//
// Invalid UTF-8 is part of the input space: the encoder turns each invalid
// byte into its single-byte token and normalizes (NFC) only the valid runs,
// so the properties checked are
//   - every id is inside the vocabulary;
//   - decoding is stable: decode(encode(decode(encode(x)))) == decode(encode(x));
//   - for ASCII input (untouched by NFC) decode(encode(x)) == x exactly;
//   - without special-token parsing, decode(encode(x)) has x's length order;
//   - the stream decoder yields only valid UTF-8.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/file_source.h"
#include "tokenizer/tokenizer_spec.h"
#include "tokenizer/utf8.h"

namespace {

using namespace ringserve::tokenizer;

std::shared_ptr<const Tokenizer> load_fixture() {
  const char* path = std::getenv("RINGSERVE_FUZZ_TOKENIZER");
  const std::string file =
      path ? path : RINGSERVE_FIXTURES_DIR "/tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz";
  auto text = read_tokenizer_file(file);
  if (!text) {
    std::fprintf(stderr, "%s\n", text.error().to_string().c_str());
    std::abort();
  }
  auto spec = parse_tokenizer_json(*text, file);
  if (!spec) std::abort();
  auto tok = BpeTokenizer::create(std::move(spec).value(), file);
  if (!tok) std::abort();
  return *tok;
}

bool valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = utf8::valid_sequence_length(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<const Tokenizer> tok = load_fixture();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  for (const bool parse_special : {true, false}) {
    const auto ids = tok->encode(input, parse_special);
    for (const int32_t id : ids) {
      if (id < 0 || id >= tok->vocab_size()) std::abort();
    }
    const std::string once = tok->decode(ids);
    if (tok->decode(tok->encode(once, parse_special)) != once) std::abort();
    bool ascii = true;
    for (const char c : input) ascii &= static_cast<unsigned char>(c) < 0x80;
    if (ascii && once != input) std::abort();

    StreamDecoder stream(tok);
    std::string joined;
    for (const int32_t id : ids) {
      const std::string piece = stream.push(id);
      if (!valid_utf8(piece)) std::abort();
      joined += piece;
    }
    joined += stream.flush();
    if (!valid_utf8(joined)) std::abort();
    if (valid_utf8(once) && joined != once) std::abort();
  }
  return 0;
}
