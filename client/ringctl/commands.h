// ringctl's subcommands, one file each. Each add_* registers a CLI11
// subcommand whose callback stores the exit status in `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

#include "common.h"

namespace ringctl {

void add_generate_command(CLI::App& app, const ConnectArgs& connect, int& exit_code);
void add_chat_command(CLI::App& app, const ConnectArgs& connect, int& exit_code);
void add_stats_command(CLI::App& app, const ConnectArgs& connect, int& exit_code);
void add_tokenize_command(CLI::App& app, int& exit_code);

}  // namespace ringctl
