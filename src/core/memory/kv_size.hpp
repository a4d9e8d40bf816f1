// KV-cache sizing: bytes per token, per sequence, per batch and per GPU, by
// layer group. One loop over the ModelSpec's layers serves every family:
// windows, latents and states are properties of the layer.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.hpp"
#include "core/model/model_spec.hpp"

namespace kvplan {

struct KvOptions {
    std::optional<Dtype> kv_dtype;        // nullopt: "auto" (serving dtype, vLLM's rule)
    std::optional<std::int64_t> context;  // tokens per sequence; nullopt: max_position_embeddings
    std::int64_t batch = 1;               // sequences
    std::int64_t tp = 1;                  // tensor-parallel ranks
    // Recurrent state of Mamba / linear-attention layers, as vLLM's
    // --mamba-cache-dtype (conv and SSM state) and --mamba-ssm-cache-dtype
    // (SSM state only): nullopt is "auto", the model's serving dtype. The KV
    // dtype does not apply to them (vllm/config/cache.py).
    std::optional<Dtype> state_dtype;
    std::optional<Dtype> ssm_state_dtype;
};

// Layers that cache the same thing (equal LayerSpecs), grouped in order of first appearance.
struct LayerGroup {
    LayerSpec spec;  // what each layer of the group caches (whole model, not per GPU)
    std::int64_t layers = 0;
    std::int64_t bytes_per_token = 0;           // all layers of the group, per context token (0 for state/cross/none)
    std::int64_t state_bytes_per_sequence = 0;  // all layers of the group, fixed per sequence
    std::int64_t tokens_held = 0;               // tokens each layer holds at the context: min(context, window)
    std::int64_t bytes_per_sequence = 0;        // all layers of the group at the context
    std::int64_t bytes_per_sequence_per_gpu = 0;
};

struct KvSizing {
    Dtype kv_dtype = Dtype::Bf16;
    Dtype conv_state_dtype = Dtype::Bf16;        // what state layers store their conv window in
    Dtype ssm_state_dtype = Dtype::Bf16;         // ... and their recurrent state in
    std::int64_t bytes_per_token = 0;            // per token while the context is shorter than every window
    std::optional<std::int64_t> context_tokens;  // nullopt only for models without per-token layers and no max position
    std::int64_t bytes_per_sequence = 0;
    std::int64_t batch = 1;
    std::int64_t bytes_total = 0;  // bytes_per_sequence x batch, whole model
    std::int64_t tp = 1;
    std::int64_t bytes_per_sequence_per_gpu = 0;
    std::int64_t bytes_per_gpu = 0;  // bytes_per_sequence_per_gpu x batch: what one rank holds
    std::vector<LayerGroup> groups;
};

// Throws Error(Usage) for a TP degree the model cannot be split by, a context
// the model needs but does not have, or sizes that overflow 64 bits.
KvSizing size_kv(const ModelSpec& spec, const KvOptions& options);

// Throws Error(Usage) unless `tp` splits the model's attention heads and KV
// heads the way engines require (one divides the other).
void check_tp(const ModelSpec& spec, std::int64_t tp);

// Whether a layer of this kind stores something for every context token
// (full, sliding, chunked, MLA); state, cross and none layers do not.
bool holds_per_token(LayerKind kind);

// Elements one layer stores per token (K + V, or the MLA latent); 0 for state/cross/none layers.
std::int64_t elements_per_token(const LayerSpec& layer);

// What one layer stores per context token on one of `tp` ranks: KV heads
// split (or replicated), MLA latents replicated; 0 for state/cross/none.
std::int64_t layer_bytes_per_token_per_gpu(const LayerSpec& layer, std::int64_t tp, Dtype kv_dtype);

// One layer's fixed recurrent state per sequence on one of `tp` ranks (split
// by the layer's heads); 0 for every other kind.
std::int64_t layer_state_bytes_per_gpu(const LayerSpec& layer, std::int64_t tp, Dtype conv_dtype, Dtype ssm_dtype);

// KV heads one of `tp` ranks holds: split when tp divides them, one
// (replicated) when tp exceeds them, as vLLM and SGLang shard attention.
std::int64_t kv_heads_per_rank(std::int64_t kv_heads, std::int64_t tp);

}  // namespace kvplan
