// `kvplan measure`: times on this machine what the roofline predicts (memory
// bandwidth, a decode step of the model's real shapes, a prefill), prints
// measured beside predicted, and writes a calibration file for
// `kvplan roofline --calibration`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/model_options.hpp"

namespace kvplan {

struct MeasureOptions {
    ModelOptions model;
    std::string device = "cpu";
    std::int64_t layers = 2;             // layers timed (the rest are scaled)
    std::vector<std::int64_t> batches;   // default 1, 8
    std::vector<std::int64_t> contexts;  // default 1024
    std::vector<std::int64_t> prompts;   // default 128
    std::string precision = "bf16";
    std::int64_t threads = 0;  // 0: every core
    std::string stream_size = "256MiB";
    std::int64_t repeats = 5;
    bool json = false;
    std::string output;             // calibration file
    std::string kv_dtype = "bf16";  // cuda: bf16 or fp8 KV cache
    std::string from;               // cuda: read a saved kvplan-gpu-bench JSON instead of running it
    std::string engine;             // cuda: this speed profile's prediction beside the measurement
    std::string gpu;                // with engine: the database device it predicts for (default: the measured one's name)
};

CLI::App* setup_measure(CLI::App& app, MeasureOptions& options);

// Runs the measurements, writing one progress line per step to `progress`.
std::string run_measure(const MeasureOptions& options, std::ostream& progress);

}  // namespace kvplan
