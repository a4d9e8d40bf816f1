// `kvplan simulate`: replay a trace or synthetic traffic through a
// continuous-batching simulator (src/core/sim) with vLLM V1's scheduler over
// the KV pool `concurrency --engine vllm` computes, or SGLang's over the
// token pool `concurrency --engine sglang` computes, each pass priced by the
// roofline.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/cmd_roofline.hpp"
#include "cli/gpu_options.hpp"
#include "cli/model_options.hpp"
#include "cli/scale_out_options.hpp"
#include "cli/spec_options.hpp"

namespace kvplan {

struct SimulateOptions {
    std::string engine = "vllm";           // vllm|sglang
    std::string schedule_policy = "fcfs";  // sglang: fcfs|lpm
    ModelOptions model;
    GpuOptions gpu;
    EfficiencyOptions efficiency;
    std::int64_t tp = 1;
    std::int64_t pp = 1;  // pipeline stages (vLLM's --pipeline-parallel-size)
    std::int64_t max_num_seqs = 0, max_num_batched_tokens = 0, long_prefill_threshold = 0;
    std::int64_t block_size = 0, num_gpu_blocks = 0, max_model_len = 0;
    double mem_util = 0;
    std::string vllm_version;  // the release whose start-up profile sizes the pool
    std::string kv_dtype = "auto", weights_dtype = "auto";
    bool no_prefix_caching = false;
    std::string cpu_offload;  // --cpu-offload SIZE: vLLM's --kv-offloading-size (total over TP x PP ranks); empty: off
    // Workload: a trace, or synthetic arrivals.
    std::string trace, trace_format = "auto";
    bool compare = false;  // --compare: the trace's measured latencies beside the simulated (docs/compare.md)
    double time_scale = 1.0;
    std::int64_t limit = 0;
    std::int64_t prefix_tokens = 0;  // a shared system prompt at the start of every prompt
    double rate = 0, burstiness = 1.0;
    std::int64_t requests = 0, concurrency = 0;
    std::uint64_t seed = 0;
    std::string input_len, output_len;
    std::string slo;
    std::int64_t replicas = 1;
    std::string router = "round-robin";
    // Disaggregated prefill/decode: both counts, or neither (0).
    std::int64_t prefill_replicas = 0, decode_replicas = 0;
    std::string prefill_gpu, decode_gpu;         // empty: --gpu
    std::int64_t prefill_tp = 0, decode_tp = 0;  // 0: --tp
    std::int64_t prefill_dp = 0, decode_dp = 0;  // 0: --dp (each pool's replicas DP groups)
    std::string kv_link = "ib-ndr";              // nvlink|ib-ndr|ib-xdr|roce|<N>GB/s
    bool layerwise_transfer = false;
    SpecFlags spec;  // speculative decoding (cli/spec_options.hpp)
    // DP attention + expert parallelism (vLLM's --data-parallel-size and
    // --enable-expert-parallel; docs/simulate.md, "Data-parallel attention").
    std::int64_t dp = 0;  // 0: not given
    std::int64_t ep = 0;
    bool enable_expert_parallel = false;
    std::int64_t redundant_experts = 0;
    std::int64_t moe_dense_tp = 0;
    std::string moe_a2a_backend;
    std::string all2all_backend;     // vLLM: "allgather_reducescatter" (default) or "deepep_low_latency"
    double expert_imbalance = 0;     // 0: not given (1.0)
    bool two_batch_overlap = false;  // vLLM --enable-dbo, SGLang --enable-two-batch-overlap
    NodeFlags nodes;
    bool json = false;
    std::string requests_csv, timeseries_csv;
    std::string plot;               // --plot: a folder for the charts (io/plot_files.hpp)
    bool debug_invariants = false;  // --debug-invariants: docs/invariants.md after every step
    std::string report;             // --report: one HTML file with the output and the charts (io/html_report.hpp)
};

CLI::App* setup_simulate(CLI::App& app, SimulateOptions& options);
std::string run_simulate(const SimulateOptions& options);

}  // namespace kvplan
