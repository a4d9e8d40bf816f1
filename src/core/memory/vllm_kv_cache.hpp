// vLLM V1's KV-cache layout for one GPU: one KV spec per layer, layers of the
// same spec grouped, groups of equal size sharing page-sized tensors, and the
// block counts and log lines that follow. Mirrors
// vllm/v1/core/kv_cache_utils.py (get_kv_cache_groups,
// _get_kv_cache_groups_uniform_page_size, get_num_blocks,
// _report_kv_cache_config), vllm/v1/kv_cache_interface.py (page sizes,
// max_memory_usage_bytes) and HybridAttentionMambaModelConfig (attention
// block size raised to fit a Mamba page). Details in docs/concurrency.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/model/model_spec.hpp"

namespace kvplan {

struct VllmLayoutInputs {
    std::int64_t tp = 1;
    Dtype kv_dtype = Dtype::Bf16;
    Dtype conv_state_dtype = Dtype::Bf16;
    Dtype ssm_state_dtype = Dtype::Bf16;
    std::int64_t block_size = 16;            // --block-size; raised for hybrid Mamba models
    std::int64_t max_model_len = 0;          // sizes a pure-Mamba model's block
    std::int64_t max_batched_tokens = 8192;  // sliding-window worst case
};

// One KV-cache group: layers of one spec, padded to the group size.
struct VllmGroup {
    LayerSpec spec;                 // what each layer caches (whole model)
    std::int64_t layers = 0;        // real layers in this group
    std::int64_t padding = 0;       // empty slots ("Add N padding layers")
    std::int64_t block_tokens = 0;  // tokens per block for this group
    std::int64_t page_bytes = 0;    // one layer's page on one GPU
};

struct VllmLayout {
    bool uniform_type = false;      // one attention type, mixed page sizes: UniformTypeKVCacheSpecs
    std::int64_t group_size = 0;    // layers per group = number of shared page tensors
    std::int64_t page_bytes = 0;    // the unified page; for uniform_type, the sum over layers
    std::int64_t block_tokens = 0;  // the smallest block size among groups (what the log multiplies by)
    std::vector<VllmGroup> groups;
    std::int64_t padding_layers = 0;
    std::vector<std::string> notes;  // layers vLLM leaves out, padding warnings

    // Bytes one block id costs across every tensor: page_bytes x group_size
    // (or the sum of pages for uniform_type).
    std::int64_t block_bytes() const;
};

// Throws Error(Data) when vLLM could not unify the page sizes either.
VllmLayout vllm_layout(const std::vector<LayerSpec>& layers, const VllmLayoutInputs& in);

// get_num_blocks: pool // page // group_size (pool // sum of pages when uniform_type).
std::int64_t vllm_num_blocks(const VllmLayout& layout, std::int64_t pool_bytes);

// "GPU KV cache size: N tokens": num_blocks // groups x block size.
std::int64_t vllm_reported_tokens(const VllmLayout& layout, std::int64_t num_blocks);

// Blocks one request of `context` tokens needs at worst (max_memory_usage_bytes
// with max_model_len = context): full and MLA cdiv(context, block); sliding
// cdiv(min(window - 1 + batched, context), block) + 1; chunked
// cdiv(min(chunk + batched, context), block); Mamba one block.
std::int64_t vllm_blocks_per_request(const VllmLayout& layout, std::int64_t context, std::int64_t max_batched_tokens);

// Blocks of a shared prefix of `prefix` tokens that requests of `context`
// tokens can share: whole blocks of full-attention and MLA groups (vLLM's
// prefix cache hashes whole blocks), and of windowed groups only while the
// whole context fits in the window.
std::int64_t vllm_shared_prefix_blocks(const VllmLayout& layout, std::int64_t prefix, std::int64_t context);

}  // namespace kvplan
