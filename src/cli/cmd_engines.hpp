// `kvplan engines`: the bundled engine speed profiles (models/engines/*.json)
// and the interconnect latency table they draw on.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kvplan {

struct EnginesOptions {
    bool json = false;
    std::string format = "table";
    std::string show;  // one profile's every value with what it was fitted on
};

CLI::App* setup_engines(CLI::App& app, EnginesOptions& options);
std::string run_engines(const EnginesOptions& options);

}  // namespace kvplan
