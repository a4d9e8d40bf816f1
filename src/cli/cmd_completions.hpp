// `kvplan completions SHELL` prints a completion script for bash, zsh or fish,
// and `kvplan help [COMMAND]` prints help: both read the command line's own
// tree (every command and flag as CLI11 holds it), so nothing is kept by hand.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kvplan {

struct CompletionsOptions {
    std::string shell;
};

struct HelpOptions {
    std::string command;  // empty: kvplan's own help
};

CLI::App* setup_completions(CLI::App& app, CompletionsOptions& options);
std::string run_completions(const CLI::App& app, const CompletionsOptions& options);

CLI::App* setup_help(CLI::App& app, HelpOptions& options);
std::string run_help(CLI::App& app, const HelpOptions& options);

}  // namespace kvplan
