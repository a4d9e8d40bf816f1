// `kvplan diff`: two models' sizing and capacity side by side, with the
// change in each figure: "what does switching to this model do to our capacity?"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kvplan {

struct DiffOptions {
    std::vector<std::string> models;  // exactly two: A, then B
    std::string gpu = "h100-sxm";
    std::vector<std::int64_t> contexts;  // default 4096, 32768
    std::int64_t tp = 1;
    std::string engine = "generic";
    std::string kv_dtype = "auto";
    double mem_util = 0;
    std::int64_t batch = 1;
    std::string format = "table";
    bool json = false;
};

CLI::App* setup_diff(CLI::App& app, DiffOptions& options);

std::string run_diff(const DiffOptions& options);

}  // namespace kvplan
