// Checks on flag values that CLI11's own validators miss.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kvplan {

// A real number in [min, max]. CLI::Range lets NaN through (every comparison
// with NaN is false, so it is never out of range), and the commands read a
// NaN as "not given": refuse it, and the infinities, naming the flag.
CLI::Validator finite_range(double min, double max);

// CLI11 drops the empty items of a comma-separated list, so
// "--gpu h100-sxm,,l4" would silently mean two GPUs. For the parsed
// subcommand's list flags, a doubled, leading or trailing comma is refused:
// throws Error(Usage) naming the flag and the value.
void refuse_empty_list_items(const CLI::App& command, const std::vector<std::string>& args);

}  // namespace kvplan
