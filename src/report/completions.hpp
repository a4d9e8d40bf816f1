// Shell completion scripts for bash, zsh and fish, rendered from the command
// line's own tree (cli/cmd_completions walks CLI11's commands and options), so
// that no flag list is kept by hand and a new flag completes the day it lands.
#pragma once

#include <string>
#include <vector>

namespace kvplan {

struct CompletionOption {
    std::vector<std::string> long_names;   // without the leading "--"
    std::vector<std::string> short_names;  // without the leading "-"
    bool takes_value = false;
    std::vector<std::string> choices;  // the values it accepts, when it names them (CLI11's IsMember)
    std::string description;           // its first sentence, for zsh and fish
};

struct CompletionCommand {
    std::string name;
    std::string description;
    std::vector<CompletionOption> options;
};

// One of "bash", "zsh", "fish"; `program` is the binary's name.
std::string completion_script(const std::string& shell, const std::string& program, const std::vector<CompletionOption>& global,
                              const std::vector<CompletionCommand>& commands);

}  // namespace kvplan
