// `kvplan baseline`: writes a baseline file (docs/ci.md) from flags: one
// scenario per model x GPU x context, with the figures computed now.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kvplan {

struct BaselineOptions {
    std::vector<std::string> models;
    std::vector<std::string> gpus;
    std::vector<std::int64_t> contexts;
    std::string tp = "1";  // a degree, or "auto": the smallest power of two that fits the longest context
    std::int64_t pp = 1;
    std::string engine = "generic";
    std::string kv_dtype = "auto";
    double mem_util = 0;     // 0: the engine's default
    std::int64_t batch = 0;  // 0: no decode figures
    std::string weights_dtype = "auto";
    std::int64_t max_model_len = 0;  // 0: the engine's default, for these and the next three
    std::int64_t max_num_seqs = 0;
    std::int64_t max_batched_tokens = 0;
    std::int64_t block_size = 0;
    std::string calibration;  // a `kvplan measure --output` file for the decode figures
    std::string tolerance;    // recorded as tolerance_percent
    std::string output;       // empty: stdout
};

CLI::App* setup_baseline(CLI::App& app, BaselineOptions& options);

// Notes (a context beyond a model's max_position_embeddings is skipped) go to
// `err`, only once the baseline is written: an error stays one line.
std::string run_baseline(const BaselineOptions& options, std::ostream& err);

}  // namespace kvplan
