// `kvplan concurrency`: the memory budget of a GPU (or a group of GPUs) and
// how many requests fit at each context length, as an engine counts it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/gpu_options.hpp"
#include "cli/model_options.hpp"

namespace kvplan {

struct ConcurrencyOptions {
    ModelOptions model;
    GpuOptions gpu;
    std::int64_t gpus = 0;
    std::int64_t tp = 1;
    std::int64_t pp = 1;
    std::int64_t dp = 0;  // attention data parallelism; 0: not given
    std::int64_t ep = 0;  // expert parallelism; 0: not given
    bool enable_expert_parallel = false;
    std::int64_t redundant_experts = 0;
    std::int64_t moe_dense_tp = 0;
    std::string moe_a2a_backend;                // SGLang: "none" or "deepep"
    std::string all2all_backend;                // vLLM: "allgather_reducescatter" (default) or "deepep_low_latency"
    std::int64_t nodes = 0, gpus_per_node = 0;  // where a DP/EP layout's GPUs sit; 0: not given
    std::vector<std::int64_t> contexts;
    double mem_util = 0;                     // 0: the engine's default
    std::string weights, overhead, kv_pool;  // sizes with units; empty: computed
    std::string kv_dtype = "auto";
    std::string weights_dtype = "auto";
    std::string mamba_cache_dtype = "auto";
    std::string mamba_ssm_cache_dtype = "auto";
    std::int64_t block_size = 0;  // 0: the engine's
    std::string allocation = "paged";
    std::int64_t max_tokens = 0;
    std::int64_t prefix_tokens = 0;
    std::string engine = "generic";
    std::int64_t max_model_len = 0;
    std::int64_t max_batched_tokens = 0;
    std::int64_t max_num_seqs = 0;
    std::string cpu_offload;     // --cpu-offload SIZE (vLLM's --kv-offloading-size); empty: none
    std::string vllm_version;    // e.g. "0.19.0", or "list"; empty: kvplan's cautious defaults (PyTorch-sort sampler, 0.35 GiB non-torch)
    bool enforce_eager = false;  // --enforce-eager: no CUDA graphs
    double cpu_offload_gb = 0;   // --cpu-offload-gb: GiB of weights vLLM keeps in host memory, per GPU
    bool json = false;
    std::string format = "table";
    bool wide = false;  // table: the overhead basis as a column, lines unwrapped
};

CLI::App* setup_concurrency(CLI::App& app, ConcurrencyOptions& options);

// Computes everything first and returns the rendered text.
std::string run_concurrency(const ConcurrencyOptions& options);

}  // namespace kvplan
