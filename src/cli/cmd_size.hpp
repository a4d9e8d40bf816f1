// `kvplan size`: KV-cache bytes per token, per sequence, per batch and per
// GPU, by layer group, plus the weights' size.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/model_options.hpp"

namespace kvplan {

struct SizeOptions {
    ModelOptions model;
    std::int64_t context = 0;  // 0: the model's max_position_embeddings
    std::int64_t batch = 1;
    std::string kv_dtype = "auto";
    std::string mamba_cache_dtype = "auto";
    std::string mamba_ssm_cache_dtype = "auto";
    std::int64_t tp = 1;
    bool json = false;
    std::string format = "table";
    bool wide = false;  // table: long lines unwrapped
};

CLI::App* setup_size(CLI::App& app, SizeOptions& options);

// Computes everything first and returns the rendered text, so that an error
// leaves no half-written output.
std::string run_size(const SizeOptions& options);

}  // namespace kvplan
