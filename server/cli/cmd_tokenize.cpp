// `ringserve tokenize`: encode text (or decode ids) with a tokenizer.json,
// in-process, for checking prompts and the tokenizer itself.
//
//   ringserve tokenize --tokenizer FILE (--text TEXT | --file FILE) [--json]
//   ringserve tokenize --tokenizer FILE --decode (--text "1,2,3" | --file F) [--json]
//
// Output: ids separated by commas (ready for `generate --prompt-ids`), or
// {"ids": [...]} with --json; with --decode the text, or {"text": "..."}.
#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "ringserve/common/expected.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::cli {

namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string text;
  std::string file;
  bool json = false;
  bool decode = false;
  bool no_special = false;
};

Expected<std::string> read_input(const TokenizeOptions& o) {
  if (o.file.empty()) return o.text;
  std::ifstream in(o.file, std::ios::binary);
  if (!in) return make_error(Errc::kNotFound, "{}: cannot open", o.file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Accepts "1,2,3", "1 2 3" or "[1, 2, 3]".
Expected<std::vector<int32_t>> parse_ids(std::string_view s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  const auto is_sep = [](char c) {
    return c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '[' || c == ']';
  };
  while (i < s.size()) {
    if (is_sep(s[i])) {
      ++i;
      continue;
    }
    int32_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
    if (ec != std::errc() || ptr == s.data() + i || (ptr != s.data() + s.size() && !is_sep(*ptr))) {
      return make_error(Errc::kInvalidArgument, "not a list of token ids at offset {}", i);
    }
    ids.push_back(v);
    i = static_cast<size_t>(ptr - s.data());
  }
  return ids;
}

Status run_tokenize(const TokenizeOptions& o) {
  const auto tok = RS_TRY(tokenizer::Tokenizer::load(o.tokenizer));
  const std::string input = RS_TRY(read_input(o));
  if (o.decode) {
    const auto ids = RS_TRY(parse_ids(input));
    for (const int32_t id : ids) {
      if (id < 0 || id >= tok->vocab_size()) {
        return make_error(Errc::kInvalidArgument, "token id {} is outside [0, {})", id,
                          tok->vocab_size());
      }
    }
    const std::string text = tok->decode(ids);
    if (o.json) {
      const nlohmann::json j = {{"text", text}};
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
    }
    return ok();
  }
  const auto ids = tok->encode(input, !o.no_special);
  if (o.json) {
    const nlohmann::json j = {{"ids", ids}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) line += ',';
      line += std::to_string(ids[i]);
    }
    std::printf("%s\n", line.c_str());
  }
  return ok();
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<TokenizeOptions>();
  auto* sub = app.add_subcommand("tokenize", "Encode text to token ids (or decode ids to text)");
  sub->add_option("--tokenizer", opts->tokenizer, "tokenizer.json or tokenizer.json.gz")
      ->required();
  auto* text = sub->add_option("--text", opts->text, "the input text (ids with --decode)");
  auto* file = sub->add_option("--file", opts->file, "read the input from this file");
  text->excludes(file);
  sub->add_flag("--json", opts->json, "print one JSON object");
  sub->add_flag("--decode", opts->decode, "the input is token ids; print their text");
  sub->add_flag("--no-special", opts->no_special,
                "treat special-token text (<｜User｜>...) as plain text");
  sub->callback([opts, text, file, &exit_code] {
    if (text->count() == 0 && file->count() == 0) {
      std::fprintf(stderr, "ringserve tokenize: give --text or --file\n");
      exit_code = 2;
      return;
    }
    if (const Status st = run_tokenize(*opts); !st) {
      std::fprintf(stderr, "ringserve tokenize: %s\n", st.error().to_string().c_str());
      exit_code = 1;
    }
  });
}

}  // namespace ringserve::cli
