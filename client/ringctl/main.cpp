// ringctl: talk to a running ringserve from the command line.
//
//   ringctl generate --prompt "Hello" -n 64
//   ringctl generate --prompt-ids 1,2,3 --json
//   ringctl chat [--hide-reasoning]
//   ringctl stats [--json]
//   ringctl tokenize --tokenizer tokenizer.json --text "Hello"
//
// Exit status: 0 success, 1 error, 2 bad usage, 130 cancelled by Ctrl-C.
#include <CLI/CLI.hpp>

#include "commands.h"

int main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the blocked mask.
  ringctl::signals::install();
  CLI::App app{"ringctl: command-line client for ringserve"};
  app.require_subcommand(1);
  ringctl::ConnectArgs connect;
  ringctl::add_connect_flags(app, connect);
  int exit_code = 0;
  ringctl::add_generate_command(app, connect, exit_code);
  ringctl::add_chat_command(app, connect, exit_code);
  ringctl::add_stats_command(app, connect, exit_code);
  ringctl::add_tokenize_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
