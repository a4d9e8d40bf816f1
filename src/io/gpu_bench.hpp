// The CUDA benchmark kvplan-gpu-bench (kernels/cuda), as `kvplan measure
// --device cuda` runs it and reads its result (or a result saved with --from).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/speed/measure_result.hpp"

namespace kvplan {

// $KVPLAN_GPU_BENCH, else kvplan-gpu-bench next to this kvplan binary.
std::string gpu_bench_path();

// Runs `bench` with `args` (already quoted where needed) and returns its
// stdout; its exit 69 (no GPU) becomes Error(Unavailable) with its one line,
// any other failure Error(Data).
std::string run_gpu_bench_command(const std::string& bench, const std::string& args);

// The measured figures of a result `j` for `model` into `r` (device,
// precision, layers, bandwidth, FLOP/s, decode and prefill steps);
// Error(Data) naming `source` when it is not one.
void read_gpu_bench_result(const nlohmann::json& j, const std::string& source, const std::string& model, MeasureResult& r);

}  // namespace kvplan
