// `kvplan gpus`: the bundled hardware database.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kvplan {

struct GpusOptions {
    bool json = false;
    std::string format = "table";
};

CLI::App* setup_gpus(CLI::App& app, GpusOptions& options);
std::string run_gpus(const GpusOptions& options);

}  // namespace kvplan
