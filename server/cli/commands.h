// Subcommands of the `ringserve` binary. Each add_* registers one CLI11
// subcommand whose callback stores its exit status in `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace ringserve::cli {

void add_serve_command(CLI::App& app, int& exit_code);      // cmd_serve.cpp
void add_generate_command(CLI::App& app, int& exit_code);   // cmd_generate.cpp
void add_tokenize_command(CLI::App& app, int& exit_code);   // cmd_tokenize.cpp
void add_convert_command(CLI::App& app, int& exit_code);    // cmd_convert.cpp
void add_preflight_command(CLI::App& app, int& exit_code);  // cmd_preflight.cpp

}  // namespace ringserve::cli
