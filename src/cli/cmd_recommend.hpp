// `kvplan recommend`: the GPU type, TP x DP split and batch that meet a TTFT
// and a TPOT target, ranked by throughput per GPU or by cost, with the engine
// commands that run them; with a workload and --slo, the SLO capacity search
// on the simulator instead (replicas, cost per million tokens).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/cmd_roofline.hpp"
#include "cli/command_output.hpp"
#include "cli/model_options.hpp"
#include "cli/spec_options.hpp"

namespace kvplan {

struct RecommendOptions {
    ModelOptions model;
    std::int64_t context = 0;
    std::int64_t prompt = 0;  // 0: context - output
    std::int64_t output = 256;
    double ttft = 0;
    double tpot = 0;
    std::string gpus = "all";  // comma-separated ids, or all
    std::int64_t max_gpus = 8;
    // The SLO search's DP attention + EP layouts over several nodes (docs/recommend.md, "Nodes").
    std::int64_t max_nodes = 1;
    std::int64_t gpus_per_node = 0;  // 0: the device's scale-up domain (8, or 72 in an NVL72 rack)
    std::string nic = "ib-ndr";
    bool two_batch_overlap = false;  // the DP + EP layouts as two micro-batches (vLLM --enable-dbo, SGLang --enable-two-batch-overlap)
    SpecFlags spec;                  // the search's vLLM candidates verify K drafts a decode step (cli/spec_options.hpp)
    std::int64_t num_gpus = 0;       // 0: one replica per candidate
    std::string prices;              // "h100-sxm=2.5,a100-80gb=1.6"
    std::string price_file;          // JSON: {"usd_per_gpu_hour": {...}} (io/price_file.hpp)
    std::string weights_dtype = "auto";
    std::string kv_dtype = "auto";
    EfficiencyOptions efficiency;
    std::int64_t top = 5;
    bool json = false;
    bool wide = false;
    std::string format = "table";
    // The SLO search on the simulator (docs/recommend.md); the analytic
    // steady-batch search above runs when no workload is given, or with --analytic.
    bool analytic = false;
    std::string slo;  // "ttft=2s,tpot=50ms[,e2e=30s]"
    double goodput = 0.99;
    std::int64_t draws = 3;   // the long runs' independent draws (core/sim/sustained.hpp); 0: the short search alone
    bool optimistic = false;  // size fleets on the step model's nominal rate, not its slow end
    std::string engine = "vllm";
    double rate = 0;
    std::string input_len, output_len;
    std::int64_t requests = 0;  // 0: the search's default
    std::uint64_t seed = 0;
    std::string trace, trace_format = "auto";
    double time_scale = 1.0;
    std::int64_t limit = 0;
    // Disaggregated prefill/decode units searched beside the aggregated candidates.
    bool disaggregated = false;
    std::string pp = "auto";       // the SLO search's pipeline stages: auto (docs/recommend.md) or a list such as 1,2,4
    std::string kv_link = "auto";  // auto: NVLink where the device has it, else ib-ndr
    // The search's charts (io/plot_files.hpp) and the HTML report (io/html_report.hpp).
    std::string plot, report;
};

CLI::App* setup_recommend(CLI::App& app, RecommendOptions& options);
// Exits 1 (with the report) when no configuration meets both targets. With
// `progress` (stderr), a search that runs past a second says how far it got
// there (cli/progress.hpp); nullptr: nothing (the benchmark).
CommandOutput run_recommend(const RecommendOptions& options, std::ostream* progress = nullptr);

}  // namespace kvplan
