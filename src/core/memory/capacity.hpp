// How many requests fit: the memory budget of every GPU, the KV pool it
// leaves, and how the engine packs requests into that pool, per context
// length. The one entry point is plan_capacity; the printers render its
// CapacityPlan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/hardware.hpp"
#include "core/memory/budget.hpp"
#include "core/memory/engine.hpp"
#include "core/memory/parallel.hpp"
#include "core/memory/vllm_kv_cache.hpp"
#include "core/memory/vllm_release.hpp"
#include "core/model/model_spec.hpp"
#include "core/model/weight_format.hpp"

namespace kvplan {

enum class Allocation {
    Paged,       // blocks of block_size tokens, allocated as the sequence grows (vLLM's PagedAttention)
    Contiguous,  // the naive engine: every request reserves max_tokens up front
};

struct CapacityInputs {
    Gpu gpu;
    Engine engine = Engine::Generic;
    std::int64_t gpus = 0;  // 0: tp x pp (one replica)
    std::int64_t tp = 1;
    std::int64_t pp = 1;
    std::vector<std::int64_t> contexts;          // tokens per request; empty: 4K, 32K, 128K up to max_model_len
    std::optional<double> mem_util;              // default: the engine's
    std::optional<std::int64_t> weights_bytes;   // per GPU, replaces the computed weights
    std::optional<std::int64_t> overhead_bytes;  // replaces the estimated overhead
    std::optional<std::int64_t> kv_pool_bytes;   // replaces the whole budget
    std::optional<Dtype> kv_dtype;               // default: serving dtype (auto)
    std::optional<Dtype> weights_dtype;          // default: as the checkpoint is served
    // A --weights-dtype format as the engine stores it (simulate, recommend
    // --slo: the pool their step prices assume); replaces weights_dtype.
    std::optional<WeightFormat> weights_format;
    std::optional<Dtype> state_dtype;  // Mamba conv/ssm state (auto)
    std::optional<Dtype> ssm_state_dtype;
    std::optional<std::int64_t> block_size;  // default: the engine's
    Allocation allocation = Allocation::Paged;
    std::optional<std::int64_t> max_tokens;     // contiguous: tokens reserved per request (default max_model_len)
    std::int64_t prefix_tokens = 0;             // a shared prefix stored once
    std::optional<std::int64_t> max_model_len;  // default: max_position_embeddings
    std::optional<std::int64_t> max_batched_tokens;
    std::optional<std::int64_t> max_num_seqs;
    // vLLM V1's top-k/top-p path, from --vllm-version (vllm_sampler_for_version):
    // it sets the dummy sampler's bytes per vocabulary entry.
    VllmSampler vllm_sampler = VllmSampler::PyTorchSort;
    // --vllm-version: the release whose start-up rules size the pool
    // (vllm_release_rules); it also sets the sampler path.
    std::optional<VllmRelease> vllm_release;
    bool enforce_eager = false;          // --enforce-eager: vLLM captures no CUDA graphs
    std::int64_t cpu_offload_bytes = 0;  // --cpu-offload-gb: weights vLLM keeps in host memory
    // Whether to search for the longest --max-model-len that fits (two binary
    // searches); sweeps that read only the rows turn it off.
    bool longest_lengths = true;
    // Whether, when nothing fits, to look for the smallest TP that would
    // (smallest_tp); sweeps that try every TP themselves turn it off.
    bool tp_search = true;
    // Data-parallel attention and expert parallelism (--dp, --ep,
    // --enable-expert-parallel...); absent: the plain TP x PP split.
    std::optional<ScaleOutInputs> scale_out;
};

struct ContextRow {
    std::int64_t context_tokens = 0;
    std::int64_t max_requests = 0;                         // per replica (one engine instance)
    std::int64_t max_requests_total = 0;                   // x attention DP ranks x data-parallel replicas
    std::int64_t max_requests_replica = 0;                 // x attention DP ranks (one replica); = max_requests without --dp
    std::int64_t kv_bytes_per_request = 0;                 // on one GPU, as the engine allocates it (blocks, windows, states)
    double kv_memory_share = 0;                            // max_requests x kv_bytes_per_request / GPU memory
    std::optional<std::int64_t> max_requests_with_prefix;  // with --prefix-tokens
    // Contiguous allocation: what each request reserves and what it uses at this context.
    std::int64_t reserved_bytes_per_request = 0;
    std::int64_t used_bytes_per_request = 0;
    std::int64_t unused_bytes = 0;  // reserved but empty, over the requests that fit, one GPU
};

// The figures an engine's start-up log prints for a plan, computed here and
// worded by the printer (src/io/engine_log.cpp) in the engine's own words.
struct EngineLogFigures {
    std::int64_t max_len_request_blocks = 0;  // vLLM: blocks one max_model_len request needs
    std::int64_t max_len_request_bytes = 0;   // vLLM: what those blocks cost on one GPU
    std::int64_t cpu_swap_blocks = 0;         // vLLM V0: swap_space (4 GiB) / block bytes
    std::int64_t kv_cache_bytes = 0;          // SGLang, TensorRT-LLM: KV cache tokens x bytes per token
    bool mla = false;                         // SGLang logs an MLA pool as one "KV size"
};

struct CapacityPlan {
    Gpu gpu;
    Engine engine = Engine::Generic;
    std::int64_t gpus = 1, tp = 1, pp = 1, replicas = 1;
    // With scale_out: each DP rank is an engine core with its own KV pool;
    // max_requests, num_blocks and kv_cache_tokens are per DP rank.
    std::optional<ScaleOut> scale_out;
    std::optional<StageWeights> stage_weights;  // the binding stage's weights per GPU, by part (with scale_out)
    Dtype kv_dtype = Dtype::Bf16;
    Dtype weights_dtype = Dtype::Bf16;  // of unquantized tensors
    QuantMethod weights_quantization = QuantMethod::None;
    Allocation allocation = Allocation::Paged;
    std::int64_t block_size = 16;
    std::int64_t max_model_len = 0;
    std::int64_t max_batched_tokens = 0;
    std::int64_t max_num_seqs = 0;
    std::int64_t max_tokens = 0;  // contiguous reservation per request
    std::int64_t prefix_tokens = 0;
    std::int64_t model_weights_bytes = 0;         // whole model
    std::int64_t binding_stage = 0;               // the pipeline stage that holds the fewest requests
    MemoryBudget budget;                          // of the binding stage
    std::int64_t kv_bytes_per_token_per_gpu = 0;  // every caching layer at full length, binding stage
    std::optional<std::int64_t> num_blocks;
    std::optional<std::int64_t> kv_cache_tokens;        // as the engine reports it (nullopt: no per-token layers)
    std::optional<std::int64_t> kv_cache_tokens_total;  // x DP ranks (with scale_out)
    std::optional<VllmLayout> vllm;
    std::optional<VllmRelease> vllm_release;  // the release whose rules sized the pool
    std::int64_t cpu_offload_bytes = 0;       // weights moved to host memory (vLLM's walk over the layers)
    std::vector<ContextRow> rows;
    std::optional<EngineLogFigures> engine_log;  // absent: nothing kvplan models the engine logging
    // The largest --max-model-len at which one request, and max_num_seqs
    // requests, still fit the pool (vLLM's estimate_max_model_len: a binary
    // search on the worst-case blocks), up to the model's limit; 0 when not
    // even one token fits; nullopt for contiguous allocation.
    std::optional<std::int64_t> longest_len_one_request;
    std::optional<std::int64_t> longest_len_max_num_seqs;
    std::int64_t length_limit = 0;  // where the search stopped: max(max_model_len, the model's max positions)
    std::vector<std::string> notes;
    std::vector<std::string> warnings;
    bool fits = false;                        // at least one request of the longest context fits
    std::optional<std::int64_t> smallest_tp;  // when it does not: the smallest TP that would
    bool tp_searched = false;                 // whether other TP degrees were tried (not with --weights/--kv-pool)
};

// Throws Error(Usage) for inconsistent flags (TP that cannot split the model,
// GPUs not a multiple of TP x PP, contiguous allocation with a paged engine).
CapacityPlan plan_capacity(const ModelSpec& spec, const CapacityInputs& in);

}  // namespace kvplan
