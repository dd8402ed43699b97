// Placeholder until the subsystem behind `ringserve tokenize` lands; replaced by its owner.
#include <cstdio>

#include "cli/commands.h"

namespace ringserve::cli {

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("tokenize", "not available in this build yet");
  sub->callback([&exit_code] {
    std::fprintf(stderr, "ringserve tokenize: not available in this build yet\n");
    exit_code = 2;
  });
}

}  // namespace ringserve::cli
