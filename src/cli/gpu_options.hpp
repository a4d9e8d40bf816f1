// The flags every command that plans for a device shares: --gpu ID (the
// hardware database) or --gpu-mem SIZE (a device known only by its memory).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/hardware.hpp"

namespace kvplan {

struct GpuOptions {
    std::string gpu;             // --gpu
    std::string gpu_mem;         // --gpu-mem
    std::string flag = "--gpu";  // what an unknown id is reported against (simulate's --decode-gpu)
};

// `gpu_mem`: whether the command can plan for a device known only by its
// memory (--gpu-mem). The roofline needs bandwidth and FLOP/s, so its --help
// does not list the flag, and the command refuses it saying why.
enum class GpuMemFlag { Offered, NotOffered };
void add_gpu_options(CLI::App& app, GpuOptions& options, GpuMemFlag gpu_mem = GpuMemFlag::Offered);

// The device the flags describe. Throws Error(Usage) when neither or both are
// given, for an unknown id, and for a bad size.
Gpu resolve_gpu(const GpuOptions& options);

}  // namespace kvplan
