// Checks on flag values that CLI11's own validators miss.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/bounds.hpp"
#include "core/memory/overhead.hpp"

namespace kvplan {

// A real number in [min, max]. CLI::Range lets NaN through (every comparison
// with NaN is false, so it is never out of range), and the commands read a
// NaN as "not given": refuse it, and the infinities, naming the flag.
CLI::Validator finite_range(double min, double max);

// finite_range over the quantity's row of the bounds table (core/bounds.hpp),
// the row's reason appended to a refusal.
CLI::Validator bounded_flag(Quantity q);

// A token count as vLLM's --max-model-len parses it (human_readable_int in
// vllm/engine/arg_utils.py): a plain integer, or one with a suffix, lowercase
// decimal (k = 10^3, m = 10^6, g = 10^9, t = 10^12; "25.6k" is 25,600) or
// uppercase binary (K = 2^10, M = 2^20, G = 2^30, T = 2^40; whole numbers
// only). "8k" is 8,000 and "8K" is 8,192. Rewrites the value to digits for
// the range check that follows.
CLI::Validator token_count();

// CLI11 drops the empty items of a comma-separated list, so
// "--gpu h100-sxm,,l4" would silently mean two GPUs. For the parsed
// subcommand's list flags, a doubled, leading or trailing comma is refused:
// throws Error(Usage) naming the flag and the value.
// --vllm-version: "0.19.0", "0.19" or "0.19.0rc1" -> the sampler that
// release profiles (vllm_sampler_for_version); throws Error(Usage) otherwise.
VllmSampler parse_vllm_version(const std::string& text);

void refuse_empty_list_items(const CLI::App& command, const std::vector<std::string>& args);

// A flag given an empty string ("--slo ''", "--output=") would run as if
// it were absent; for the parsed subcommand every option that takes a value
// must have a non-empty one: throws Error(Usage) naming the flag.
void refuse_empty_values(const CLI::App& command);

// An output file (--output, --report, --requests-csv, --timeseries-csv)
// that is one of the files the command reads (any other flag of `app` or
// `command` naming an existing file, or a model folder's config.json) would
// be replaced by the output: throws Error(Usage) naming both flags.
void refuse_outputs_over_inputs(const CLI::App& app, const CLI::App& command);

// --seed: a whole number from 0 to 2^64 - 1, digits only. CLI11 alone
// clamps "-1" and "99999999999999999999" to 2^64 - 1 without a word.
CLI::Validator seed_value();

// The items of a comma-separated flag value; an empty item ("a,,b", "a,")
// is a typo, refused rather than skipped: throws Error(Usage) naming `flag`.
std::vector<std::string> split_list(const std::string& text, const char* flag);

// Old spellings kept for one release print one line on stderr naming the new
// one: roofline's and recommend's --output (output tokens) is --output-tokens.
void warn_deprecated_flags(const CLI::App& command, std::ostream& err);

// --wide, the same on every command with a text table: the full tables, as
// wide as they take. Without it the text fits 100 columns (io/table.hpp).
void add_wide_flag(CLI::App& command, bool& wide);

}  // namespace kvplan
