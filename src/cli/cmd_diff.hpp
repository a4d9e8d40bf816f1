// `kvplan diff`: two configurations' sizing and capacity side by side, with
// the change in each figure: "what does switching to this model (or GPU, or
// KV dtype) do to our capacity?"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kvplan {

struct DiffOptions {
    // One of these three has two values, A then B; the others one, shared.
    std::vector<std::string> models;
    std::vector<std::string> gpus;       // default h100-sxm
    std::vector<std::string> kv_dtypes;  // default auto
    std::vector<std::int64_t> contexts;  // default 4096, 32768
    std::int64_t tp = 1;
    std::string engine = "generic";
    double mem_util = 0;
    std::int64_t batch = 1;
    std::string format = "table";
    bool json = false;
    bool wide = false;  // table: B - A, and exact bytes beside GiB
};

CLI::App* setup_diff(CLI::App& app, DiffOptions& options);

std::string run_diff(const DiffOptions& options);

}  // namespace kvplan
