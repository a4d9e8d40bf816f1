// `kvplan check`: recomputes every scenario of a baseline file and fails
// (exit 1) when capacity went down or bytes went up beyond the tolerance;
// `--update` rewrites the expected figures instead. docs/ci.md.
#pragma once

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/command_output.hpp"

namespace kvplan {

struct CheckOptions {
    std::string baseline;
    std::string tolerance;        // empty: the baseline's tolerance_percent, else 0
    std::string format = "text";  // text|json|junit|github|markdown
    std::string output;           // write the report here (atomically) instead of stdout
    bool strict = false;          // improvements fail too: the baseline is stale
    bool update = false;          // rewrite the baseline's expected figures
    bool changes_only = false;    // text: only the figures that changed
    bool wide = false;            // text: the scenario on every row, lines unwrapped
};

CLI::App* setup_check(CLI::App& app, CheckOptions& options);

// Writes one "kvplan: error: ..." line to `err` per scenario it could not compute.
CommandOutput run_check(const CheckOptions& options, std::ostream& err);

}  // namespace kvplan
