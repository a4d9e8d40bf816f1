// Help text that fits 100 columns (report/table.hpp, kFitColumns), as every
// other default output does. CLI11's own formatter prints each description on
// one line, however long (up to 241 columns before this). This one wraps
// descriptions under their column, prose at spaces, and a long example command
// at spaces with a trailing backslash, so that it still pastes into a shell.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "report/table.hpp"

namespace kvplan {

class FittedHelp : public CLI::Formatter {
public:
    std::string make_option(const CLI::Option* opt, bool is_positional) const override;
    std::string make_subcommand(const CLI::App* sub) const override;
    std::string make_description(const CLI::App* app) const override;
    std::string make_usage(const CLI::App* app, std::string name) const override;
    std::string make_footer(const CLI::App* app) const override;
    std::string make_expanded(const CLI::App* sub) const override;

private:
    mutable std::size_t width_ = kFitColumns;  // narrower while --help-all indents a command
};

// `text` with every line longer than the fitted width broken as help text is:
// an example command ("  kvplan ...") with " \" continuations (a trailing
// "# comment" moves to a line of its own above it), prose at spaces under its
// own indent. Lines that fit are kept as they are.
std::string fit_help_text(const std::string& text, std::size_t width = kFitColumns);

}  // namespace kvplan
