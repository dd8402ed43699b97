// ringserve: a local INT8 inference server for Qwen2-family models.
// Exceptions stop here; everything below returns errors as values.
#include <cstdio>
#include <exception>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ringserve: local INT8 LLM inference over a Unix socket and a shared-memory ring"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ringserve 0.1.0");
  int exit_code = 0;
  ringserve::cli::add_serve_command(app, exit_code);
  ringserve::cli::add_generate_command(app, exit_code);
  ringserve::cli::add_tokenize_command(app, exit_code);
  ringserve::cli::add_convert_command(app, exit_code);
  ringserve::cli::add_preflight_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringserve: fatal: %s\n", e.what());
    return 70;
  }
  return exit_code;
}
