#include "tokenizer/tokenizer.h"

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/file_source.h"
#include "tokenizer/tokenizer_spec.h"
#include "util/log.h"

namespace ringserve::tokenizer {

Expected<std::shared_ptr<const Tokenizer>> Tokenizer::from_json(std::string_view json_text,
                                                                std::string_view source) {
  TokenizerSpec spec = RS_TRY(parse_tokenizer_json(json_text, source));
  auto tok = RS_TRY(BpeTokenizer::create(std::move(spec), source));
  return std::shared_ptr<const Tokenizer>(std::move(tok));
}

Expected<std::shared_ptr<const Tokenizer>> Tokenizer::load(const std::filesystem::path& path) {
  const std::string text = RS_TRY(read_tokenizer_file(path));
  auto tok = RS_TRY(from_json(text, path.string()));
  log::get("tokenizer")->info("loaded {}: {} ids", path.string(), tok->vocab_size());
  return tok;
}

}  // namespace ringserve::tokenizer
