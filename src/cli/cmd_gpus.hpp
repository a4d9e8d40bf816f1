// `kvplan gpus`: the hardware database (bundled, plus --gpu-file / KVPLAN_GPU_FILE).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kvplan {

struct GpusOptions {
    bool json = false;
    std::string format = "table";
    bool schema = false;  // print the JSON Schema of a device file instead
    bool wide = false;    // table: names, and units in every cell
};

CLI::App* setup_gpus(CLI::App& app, GpusOptions& options);
std::string run_gpus(const GpusOptions& options);

}  // namespace kvplan
