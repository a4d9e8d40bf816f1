#include "core/memory/kv_size.hpp"

#include <algorithm>
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace kvplan {

// Check the TP degree the way vLLM does before it shards anything
// (vllm/config: verify_with_parallel_config; attention heads, KV heads).
void check_tp(const ModelSpec& spec, std::int64_t tp) {
    if (tp < 1) usage_error("--tp must be at least 1, found " + std::to_string(tp));
    if (spec.heads > 0 && spec.heads % tp != 0)
        usage_error("--tp " + std::to_string(tp) + " does not divide the model's " + std::to_string(spec.heads) +
                    " attention heads (num_attention_heads); engines require it");
    for (const LayerSpec& l : spec.layers) {
        if (l.kind == LayerKind::Mla || !holds_per_token(l.kind)) continue;
        if (l.kv_heads >= tp ? l.kv_heads % tp != 0 : tp % l.kv_heads != 0)
            usage_error("--tp " + std::to_string(tp) + " cannot shard " + std::to_string(l.kv_heads) + " KV heads (one must divide the other)");
    }
}

// One sequence: everything but the batch products.
KvSizing size_sequence(const ModelSpec& spec, const KvOptions& o);

bool holds_per_token(LayerKind kind) {
    return kind == LayerKind::Full || kind == LayerKind::Sliding || kind == LayerKind::Chunked || kind == LayerKind::Mla;
}

std::int64_t elements_per_token(const LayerSpec& l) {
    switch (l.kind) {
        case LayerKind::Full:
        case LayerKind::Sliding:
        case LayerKind::Chunked:
            // K and V: the "2 x kv_heads x head_dim" of the textbook formula.
            return checked_mul(l.kv_heads, l.k_head_dim + l.v_head_dim, "KV elements per token");
        case LayerKind::Mla: return l.latent_dim;  // one latent for K and V together, shared by all heads
        case LayerKind::State:
        case LayerKind::Cross:
        case LayerKind::None: return 0;
    }
    return 0;
}

std::int64_t kv_heads_per_rank(std::int64_t kv_heads, std::int64_t tp) {
    return kv_heads >= tp ? kv_heads / tp : 1;
}

std::int64_t layer_bytes_per_token_per_gpu(const LayerSpec& l, std::int64_t tp, Dtype kv_dtype) {
    if (!holds_per_token(l.kind)) return 0;
    if (l.kind == LayerKind::Mla) return bytes_for(elements_per_token(l), kv_dtype);
    LayerSpec shard = l;
    shard.kv_heads = kv_heads_per_rank(l.kv_heads, tp);
    return bytes_for(elements_per_token(shard), kv_dtype);
}

std::int64_t layer_state_bytes_per_gpu(const LayerSpec& l, std::int64_t tp, Dtype conv_dtype, Dtype ssm_dtype) {
    if (l.kind != LayerKind::State) return 0;
    const std::int64_t shards = std::min<std::int64_t>(tp, std::max<std::int64_t>(1, l.state_tp_unit));
    // Mamba-2's B and C groups follow the head shards: when TP does not
    // divide n_groups vLLM adds tp - n_groups of them before splitting the
    // conv state (mamba_utils.py, extra_groups_for_head_shards: n_groups 1
    // at TP 4 becomes 4, one a rank).
    std::int64_t conv = l.conv_state_elements;
    if (l.state_groups > 0 && shards > 1 && l.state_groups % shards != 0)
        conv = checked_add(conv, checked_mul(shards - l.state_groups, l.group_conv_elements, "Mamba-2 replicated groups"), "Mamba-2 conv state");
    const std::int64_t whole = checked_add(bytes_for(conv, conv_dtype), bytes_for(l.ssm_state_elements, ssm_dtype));
    return ceil_div(whole, shards);
}

KvSizing size_kv(const ModelSpec& spec, const KvOptions& o) {
    // Per sequence first. Without --context the context is the config's
    // max_position_embeddings: an overflow there comes from the file, and the
    // error says so. The batch is a flag: its overflow is a usage error.
    KvSizing out = !o.context && spec.max_position_tokens > 0
                       ? overflow_blames(spec.name + " (context from max_position_embeddings " + std::to_string(spec.max_position_tokens) + ")",
                                         [&] { return size_sequence(spec, o); })
                       : size_sequence(spec, o);
    out.bytes_total = checked_mul(out.bytes_per_sequence, o.batch, "KV bytes for the batch");
    out.bytes_per_gpu = checked_mul(out.bytes_per_sequence_per_gpu, o.batch, "KV bytes per GPU");
    return out;
}

KvSizing size_sequence(const ModelSpec& spec, const KvOptions& o) {
    check_tp(spec, o.tp);
    if (o.batch < 1) usage_error("--batch must be at least 1, found " + std::to_string(o.batch));

    KvSizing out;
    out.kv_dtype = o.kv_dtype.value_or(auto_kv_dtype(spec));
    out.conv_state_dtype = o.state_dtype.value_or(serving_dtype(spec.checkpoint_dtype));
    out.ssm_state_dtype = o.ssm_state_dtype.value_or(out.conv_state_dtype);
    out.batch = o.batch;
    out.tp = o.tp;

    bool per_token = std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) { return holds_per_token(l.kind); });
    if (o.context) {
        if (*o.context < 1) usage_error("--context must be at least 1 token, found " + std::to_string(*o.context));
        out.context_tokens = *o.context;
    } else if (spec.max_position_tokens > 0) {
        out.context_tokens = spec.max_position_tokens;
    } else if (per_token) {
        usage_error(spec.name + " gives no max_position_embeddings; pass --context N");
    }
    const std::int64_t context = out.context_tokens.value_or(0);

    // A layer's bytes depend on its spec alone: a run of equal layers (most
    // models are one) computes them once.
    const LayerSpec* last = nullptr;
    std::size_t group = 0;
    std::int64_t per_token_bytes = 0, held = 0, state_bytes = 0, seq_bytes = 0, rank_bytes = 0;
    for (const LayerSpec& l : spec.layers) {
        if (!last || !(*last == l)) {
            auto it = std::find_if(out.groups.begin(), out.groups.end(), [&](const LayerGroup& g) { return g.spec == l; });
            if (it == out.groups.end()) {
                out.groups.push_back(LayerGroup{l});
                it = out.groups.end() - 1;
            }
            group = static_cast<std::size_t>(it - out.groups.begin());
            // Whole model.
            per_token_bytes = bytes_for(elements_per_token(l), out.kv_dtype);
            held = holds_per_token(l.kind) ? (l.window_tokens > 0 ? std::min(context, l.window_tokens) : context) : 0;
            state_bytes = l.kind == LayerKind::State ? checked_add(bytes_for(l.conv_state_elements, out.conv_state_dtype),
                                                                   bytes_for(l.ssm_state_elements, out.ssm_state_dtype))
                                                     : 0;
            seq_bytes = checked_add(checked_mul(per_token_bytes, held, "KV bytes per sequence"), state_bytes);
            // One TP rank: attention heads split (or replicate), MLA latents
            // replicate on every rank, recurrent states split by their heads.
            rank_bytes = checked_add(checked_mul(layer_bytes_per_token_per_gpu(l, o.tp, out.kv_dtype), held, "KV bytes per sequence"),
                                     layer_state_bytes_per_gpu(l, o.tp, out.conv_state_dtype, out.ssm_state_dtype));
            last = &l;
        }
        LayerGroup& g = out.groups[group];
        g.layers += 1;
        g.tokens_held = held;
        g.bytes_per_token = checked_add(g.bytes_per_token, per_token_bytes);
        g.state_bytes_per_sequence = checked_add(g.state_bytes_per_sequence, state_bytes);
        g.bytes_per_sequence = checked_add(g.bytes_per_sequence, seq_bytes, "KV bytes per sequence");
        g.bytes_per_sequence_per_gpu = checked_add(g.bytes_per_sequence_per_gpu, rank_bytes);

        out.bytes_per_token = checked_add(out.bytes_per_token, per_token_bytes, "KV bytes per token");
        out.bytes_per_sequence = checked_add(out.bytes_per_sequence, seq_bytes, "KV bytes per sequence");
        out.bytes_per_sequence_per_gpu = checked_add(out.bytes_per_sequence_per_gpu, rank_bytes, "KV bytes per sequence");
    }
    return out;
}

}  // namespace kvplan
