// `kvplan roofline`: decode step time, throughput and bound versus batch
// size, TTFT and end-to-end latency, on one device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/gpu_options.hpp"
#include "cli/model_options.hpp"
#include "cli/scale_out_options.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

// The flags every command that costs a step shares.
struct EfficiencyOptions {
    double bw_efficiency = 0;  // 0: the default fraction
    double flops_efficiency = 0;
    double step_overhead_ms = -1;  // < 0: the default
    std::string calibration;       // a file written by `kvplan measure --output`
};

void add_efficiency_options(CLI::App& app, EfficiencyOptions& options);
// Builds the Efficiency the flags describe on `engine`'s speed profile
// (models/engines/<engine>.json; reads the calibration file).
Efficiency resolve_efficiency(const EfficiencyOptions& options, const std::string& engine);
// The engine's own KV cache dtype (EngineProfile::kv_cache_dtype, llama.cpp's
// f16) for --kv-dtype auto, unless the model's files already name one.
void use_engine_kv_default(ModelSpec& model, const Efficiency& efficiency);

struct RooflineOptions {
    ModelOptions model;
    GpuOptions gpu;
    std::int64_t tp = 1;
    std::vector<std::int64_t> batches;
    std::int64_t context = 0;  // 0: prompt + output
    std::int64_t prompt = 2048;
    std::int64_t output = 512;
    std::string weights_dtype = "auto";
    std::string kv_dtype = "auto";
    EfficiencyOptions efficiency;
    std::string engine = "generic";  // the speed profile
    double price_per_hour = 0;
    bool json = false;
    std::string format = "table";
    bool wide = false;   // table: every column and line at full width
    std::string plot;    // --plot: a folder for step_time.svg, pareto.svg and their CSVs (io/plot_files.hpp)
    std::string report;  // --report: one HTML file with the output and the charts (io/html_report.hpp)
    // Speculative decoding (docs/roofline.md, "Speculative decoding").
    std::string spec_method;  // mtp|eagle|draft; "": off
    std::int64_t spec_tokens = 0;
    std::string acceptance;   // one rate, or K comma-separated per-position rates
    std::string draft_model;  // for draft: any --model kvplan loads
    // DP attention + expert parallelism, as `concurrency` takes them (docs/scale-out.md, "Step cost").
    std::int64_t dp = 0;  // 0: not given
    std::int64_t ep = 0;
    bool enable_expert_parallel = false;
    std::int64_t redundant_experts = 0;
    std::int64_t moe_dense_tp = 0;
    std::string moe_a2a_backend;
    std::string all2all_backend;     // vLLM: "allgather_reducescatter" (default) or "deepep_low_latency"
    double expert_imbalance = 0;     // 0: not given (1.0)
    bool two_batch_overlap = false;  // vLLM --enable-dbo, SGLang --enable-two-batch-overlap
    NodeFlags nodes;                 // --nodes, --gpus-per-node, --nic
};

CLI::App* setup_roofline(CLI::App& app, RooflineOptions& options);
std::string run_roofline(const RooflineOptions& options);

}  // namespace kvplan
