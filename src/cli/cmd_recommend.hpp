// `kvplan recommend`: the GPU type, TP x DP split and batch that meet a TTFT
// and a TPOT target, ranked by throughput per GPU or by cost, with the engine
// commands that run them.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/command_output.hpp"

#include "cli/cmd_roofline.hpp"
#include "cli/model_options.hpp"

namespace kvplan {

struct RecommendOptions {
    ModelOptions model;
    std::int64_t context = 0;
    std::int64_t prompt = 0;   // 0: context - output
    std::int64_t output = 256;
    double ttft = 0;
    double tpot = 0;
    std::string gpus = "all";  // comma-separated ids, or all
    std::int64_t max_gpus = 8;
    std::int64_t num_gpus = 0;  // 0: one replica per candidate
    std::string prices;        // "h100-sxm=2.5,a100-80gb=1.6"
    std::string weights_dtype = "auto";
    std::string kv_dtype = "auto";
    EfficiencyOptions efficiency;
    std::int64_t top = 5;
    bool json = false;
    bool wide = false;
    std::string format = "table";
};

CLI::App* setup_recommend(CLI::App& app, RecommendOptions& options);
// Exits 1 (with the report) when no configuration meets both targets.
CommandOutput run_recommend(const RecommendOptions& options);

}  // namespace kvplan
