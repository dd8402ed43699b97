// The tokenizer.json loader on arbitrary bytes: it must return a value or an
// error, never crash, hang or leak. A tokenizer that loads is exercised a
// little, since a hostile vocab or merge list could break encoding instead.
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/file_source.h"
#include "tokenizer/tokenizer_spec.h"

using namespace ringserve::tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // gzip input goes through the inflater with a small limit.
  if (size >= 2 && data[0] == 0x1F && data[1] == 0x8B) {
    (void)gunzip(input, 1 << 20, "fuzz.gz");
    return 0;
  }
  auto spec = parse_tokenizer_json(input, "fuzz.json");
  if (!spec) return 0;
  auto tok = BpeTokenizer::create(std::move(spec).value(), "fuzz.json");
  if (!tok) return 0;
  const auto ids = (*tok)->encode("Hello, world! <think> 你好 \xff 123");
  (void)(*tok)->decode(ids);
  (void)(*tok)->token_to_id("Hello");
  return 0;
}
