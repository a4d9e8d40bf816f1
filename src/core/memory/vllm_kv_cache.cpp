#include "core/memory/vllm_kv_cache.hpp"

#include <algorithm>
#include <map>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"

namespace kvplan {

namespace {

// The spec vLLM builds for one layer on one GPU, before page unification.
struct LayerKv {
    LayerSpec spec;
    std::int64_t bytes_per_token = 0;  // attention kinds
    std::int64_t state_bytes = 0;      // Mamba / linear attention
};

bool attention_kind(LayerKind k) {
    return holds_per_token(k);
}

}  // namespace

std::int64_t VllmLayout::block_bytes() const {
    return uniform_type ? page_bytes : checked_mul(page_bytes, group_size, "block bytes");
}

VllmLayout vllm_layout(const std::vector<LayerSpec>& layers, const VllmLayoutInputs& in) {
    VllmLayout out;
    std::vector<LayerKv> kv;
    std::int64_t cross = 0;
    for (const LayerSpec& l : layers) {
        if (l.kind == LayerKind::None) continue;  // no KV spec at all
        if (l.kind == LayerKind::Cross) {         // sized by encoder tokens, not the context
            ++cross;
            continue;
        }
        LayerKv k{l, layer_bytes_per_token_per_gpu(l, in.tp, in.kv_dtype),
                  layer_state_bytes_per_gpu(l, in.tp, in.conv_state_dtype, in.ssm_state_dtype)};
        kv.push_back(k);
    }
    if (cross > 0)
        out.notes.push_back(std::to_string(cross) +
                            " cross-attention layers hold encoder (image) tokens, which vLLM sizes from max_num_encoder_input_tokens; not counted");
    if (kv.empty()) data_error("the model has no layer that caches anything; there is no KV cache to size");

    // Block size. A hybrid with Mamba layers raises the attention block until
    // one attention page holds a Mamba state (kernel alignment 16):
    // attn_block = 16 x cdiv(mamba_page, 16 x attention bytes per token).
    // Without attention, vLLM's mamba_block_size is max_model_len.
    std::int64_t attn_token = 0, mamba_page = 0;
    for (const LayerKv& k : kv) {
        if (attention_kind(k.spec.kind)) attn_token = std::max(attn_token, k.bytes_per_token);
        mamba_page = std::max(mamba_page, k.state_bytes);
    }
    std::int64_t block = in.block_size;
    if (mamba_page > 0 && attn_token > 0) {
        const std::int64_t needed = 16 * ceil_div(mamba_page, checked_mul(16, attn_token, "page bytes"));
        if (needed > block) {
            out.notes.push_back("vLLM raises the attention block size from " + std::to_string(block) + " to " + std::to_string(needed) +
                                " tokens so that one page holds a Mamba state");
            block = needed;
        }
    }
    if (mamba_page > 0 && attn_token == 0) block = std::max<std::int64_t>(1, in.max_model_len);

    // Pages per layer, and the distinct specs ("types") in order of first use.
    auto page_of = [&](const LayerKv& k) {
        return attention_kind(k.spec.kind) ? checked_mul(block, k.bytes_per_token, "page bytes") : k.state_bytes;
    };
    struct Type {
        LayerSpec spec;
        std::int64_t layers = 0;
        std::int64_t page = 0;
    };
    std::vector<Type> types;
    for (const LayerKv& k : kv) {
        auto it = std::find_if(types.begin(), types.end(), [&](const Type& t) { return t.spec == k.spec; });
        if (it == types.end()) {
            types.push_back(Type{k.spec, 0, page_of(k)});
            it = types.end() - 1;
        }
        it->layers += 1;
    }

    auto kind_class = [](LayerKind k) { return k == LayerKind::Full ? 0 : static_cast<int>(k); };
    const bool one_class =
        std::all_of(types.begin(), types.end(), [&](const Type& t) { return kind_class(t.spec.kind) == kind_class(types[0].spec.kind); });

    if (types.size() == 1) {
        // One spec: one group of every layer.
        out.group_size = types[0].layers;
        out.page_bytes = types[0].page;
        out.block_tokens = block;
        out.groups.push_back(VllmGroup{types[0].spec, types[0].layers, 0, block, types[0].page});
        return out;
    }
    if (one_class && types[0].spec.kind != LayerKind::State && types[0].spec.kind != LayerKind::Sliding && types[0].spec.kind != LayerKind::Chunked) {
        // Same attention type, different shapes (per-layer KV heads):
        // UniformTypeKVCacheSpecs, one group, a block costs the sum of pages.
        out.uniform_type = true;
        out.group_size = 1;
        out.block_tokens = block;
        for (const Type& t : types) {
            out.page_bytes = checked_add(out.page_bytes, checked_mul(t.page, t.layers, "block bytes"));
            out.groups.push_back(VllmGroup{t.spec, t.layers, 0, block, t.page});
        }
        return out;
    }

    // Hybrid: unify pages to the largest (smaller attention pages get a
    // proportionally larger block; Mamba pages are padded), then split every
    // type into groups of group_size layers.
    std::int64_t page = 0;
    for (const Type& t : types) page = std::max(page, t.page);
    std::int64_t min_layers = types[0].layers, max_layers = types[0].layers;
    for (const Type& t : types) {
        min_layers = std::min(min_layers, t.layers);
        max_layers = std::max(max_layers, t.layers);
    }
    // "If max < 1.5 x min, use the largest count" (gpt-oss-20b + eagle: 12 SW + 13 full).
    out.group_size = 2 * max_layers < 3 * min_layers ? max_layers : min_layers;
    out.page_bytes = page;
    out.block_tokens = 0;
    for (const Type& t : types) {
        std::int64_t group_block = block;
        if (t.spec.kind != LayerKind::State && t.page != page) {
            if (page % t.page != 0)
                data_error("vLLM cannot unify this model's KV page sizes (" + std::to_string(t.page) + " B does not divide " + std::to_string(page) +
                           " B); it refuses such hybrids");
            group_block = block * (page / t.page);
        }
        const std::int64_t groups = ceil_div(t.layers, out.group_size);
        for (std::int64_t g = 0; g < groups; ++g) {
            const std::int64_t real = std::min(out.group_size, t.layers - g * out.group_size);
            out.groups.push_back(VllmGroup{t.spec, real, out.group_size - real, group_block, page});
            out.padding_layers += out.group_size - real;
        }
        if (t.spec.kind != LayerKind::State) out.block_tokens = out.block_tokens == 0 ? group_block : std::min(out.block_tokens, group_block);
    }
    if (out.block_tokens == 0) out.block_tokens = block;
    if (out.padding_layers > 0) {
        const std::int64_t slots = checked_mul(static_cast<std::int64_t>(out.groups.size()), out.group_size, "layer slots");
        out.notes.push_back("vLLM adds " + std::to_string(out.padding_layers) + " padding layers to make groups equal, wasting up to " +
                            std::to_string(100 * out.padding_layers / slots) + "% of KV memory");
    }
    return out;
}

std::int64_t vllm_num_blocks(const VllmLayout& layout, std::int64_t pool_bytes) {
    if (pool_bytes <= 0) return 0;
    return pool_bytes / layout.block_bytes();
}

std::int64_t vllm_reported_tokens(const VllmLayout& layout, std::int64_t num_blocks) {
    const std::int64_t groups = layout.uniform_type ? 1 : static_cast<std::int64_t>(layout.groups.size());
    return checked_mul(num_blocks / groups, layout.block_tokens, "KV cache tokens");
}

std::int64_t vllm_blocks_per_request(const VllmLayout& layout, std::int64_t context, std::int64_t batched) {
    if (layout.uniform_type) return ceil_div(context, layout.block_tokens);
    std::int64_t blocks = 0;
    for (const VllmGroup& g : layout.groups) {
        const std::int64_t b = g.block_tokens;
        switch (g.spec.kind) {
            case LayerKind::Full:
            case LayerKind::Mla: blocks += ceil_div(context, b); break;
            case LayerKind::Sliding: blocks += ceil_div(std::min(g.spec.window_tokens - 1 + batched, context), b) + 1; break;
            case LayerKind::Chunked: blocks += ceil_div(std::min(g.spec.window_tokens + batched, context), b); break;
            case LayerKind::State: blocks += 1; break;
            default: break;
        }
    }
    return blocks;
}

std::int64_t vllm_shared_prefix_blocks(const VllmLayout& layout, std::int64_t prefix, std::int64_t context) {
    std::int64_t shared = 0;
    for (const VllmGroup& g : layout.groups) {
        const bool windowed = g.spec.kind == LayerKind::Sliding || g.spec.kind == LayerKind::Chunked;
        if (g.spec.kind == LayerKind::State || (windowed && context > g.spec.window_tokens)) continue;
        shared += std::min(prefix, context) / g.block_tokens;
        if (layout.uniform_type) break;  // one block id covers every layer
    }
    return shared;
}

}  // namespace kvplan
