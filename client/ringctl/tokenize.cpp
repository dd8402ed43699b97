// `ringctl tokenize`: token ids of a text, on the client side. The wire
// protocol has no tokenize message, and a local tokenizer keeps this usable
// with no server running: pass the model's tokenizer.json(.gz) with
// --tokenizer (the same file `ringserve serve` uses).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "tokenizer/tokenizer.h"

namespace ringctl {
namespace {

struct TokenizeArgs {
  std::string tokenizer;
  std::string text;
  std::string file;
  std::vector<int32_t> decode;
  bool json = false;
};

int run(const TokenizeArgs& args) {
  auto tok = ringserve::tokenizer::Tokenizer::load(args.tokenizer);
  if (!tok) {
    std::fprintf(stderr, "ringctl: %s\n", tok.error().to_string().c_str());
    return 1;
  }
  if (!args.decode.empty()) {
    const std::string text = (*tok)->decode(args.decode);
    if (args.json) {
      std::printf("%s\n", nlohmann::json({{"text", text}})
                              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                              .c_str());
    } else {
      std::printf("%s\n", text.c_str());
    }
    return 0;
  }
  std::string text = args.text;
  if (!args.file.empty()) {
    std::ifstream in(args.file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "ringctl: cannot open %s\n", args.file.c_str());
      return 1;
    }
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  const std::vector<int32_t> ids = (*tok)->encode(text);
  if (args.json) {
    std::printf("%s\n", nlohmann::json({{"ids", ids}, {"count", ids.size()}}).dump().c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TokenizeArgs>();
  auto* sub = app.add_subcommand("tokenize", "Token ids of a text (local tokenizer file)");
  sub->add_option("--tokenizer", args->tokenizer, "tokenizer.json or tokenizer.json.gz")
      ->required()
      ->check(CLI::ExistingFile);
  auto* text = sub->add_option("--text", args->text, "Text to tokenize");
  auto* file = sub->add_option("--file", args->file, "File to tokenize")->check(CLI::ExistingFile);
  auto* decode =
      sub->add_option("--decode", args->decode, "Decode these ids instead: 1,2,3")->delimiter(',');
  text->excludes(file)->excludes(decode);
  file->excludes(decode);
  sub->add_flag("--json", args->json, "Print JSON");
  sub->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace ringctl
