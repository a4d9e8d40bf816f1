// `kvplan models`: the bundled presets with their shapes and sizes.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kvplan {

struct ModelsOptions {
    bool json = false;
    bool wide = false;  // table: Hugging Face ids and model types too
};

CLI::App* setup_models(CLI::App& app, ModelsOptions& options);
std::string run_models(const ModelsOptions& options);

}  // namespace kvplan
