// kvplan's command line: builds the CLI11 app, runs the chosen subcommand,
// and maps errors to exit codes (docs/errors.md). main() and the in-process
// CLI tests both call run().
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace kvplan {

// Exit codes (sysexits-style where one exists).
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;         // bad flags or arguments
inline constexpr int kExitDataErr = 65;      // EX_DATAERR: a file's content is wrong
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: no GPU, or a build without CUDA
inline constexpr int kExitInternal = 70;     // EX_SOFTWARE: kvplan's own fault, or memory ran out

// `args` excludes the program name. Output reaches `out` only when the whole
// command succeeded; errors go to `err` as one line "kvplan: error: ...",
// whatever was thrown: an exception that is not kvplan's `Error` (a broken
// invariant, memory that ran out) is exit 70 with its message, never a signal.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace kvplan
