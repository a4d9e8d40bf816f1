// The flags every command that plans for a device shares: --gpu ID (the
// hardware database) or --gpu-mem SIZE (a device known only by its memory).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/hardware.hpp"

namespace kvplan {

struct GpuOptions {
    std::string gpu;      // --gpu
    std::string gpu_mem;  // --gpu-mem
};

void add_gpu_options(CLI::App& app, GpuOptions& options);

// The device the flags describe. Throws Error(Usage) when neither or both are
// given, for an unknown id, and for a bad size.
Gpu resolve_gpu(const GpuOptions& options);

}  // namespace kvplan
