// Step 2 of parsing: which kind of layer each decoder layer is, and what its
// kind needs (window, latent size, recurrent state size). Every family rule
// is applied here, once; downstream code only sees LayerSpec values.
//
// Sources for each rule (transformers' modeling files unless noted):
//   layer_types                 Qwen3-Next, gpt-oss, newer Gemma-3: per-layer list
//   full_attention_interval     Qwen3-Next without layer_types: full when (i+1) % interval == 0, else linear
//   hybrid_override_pattern     Nemotron-H: '*' attention, 'M' Mamba-2, '-' MLP, 'E' MoE
//   attn_layer_period/offset    Jamba: attention when i % period == offset, else Mamba
//   layers_block_type           Bamba/Granite-4/Zamba-style list of "attention"/"mamba"
//   cross_attention_layers      mllama: those layers attend to image tokens
//   gemma2                      even layers sliding, odd layers full
//   sliding_window_pattern      Gemma-3/Cohere-2: full when (i+1) % pattern == 0
//   mistral/mixtral/phi3/phimoe/starcoder2 with sliding_window: every layer sliding
//   qwen2/qwen3 (+ _moe)        sliding only with use_sliding_window, for i >= max_window_layers
//   llama4                      chunked (attention_chunk_size) except NoPE layers, which are full
//   kv_lora_rank                MLA (DeepSeek-V2/V3, Kimi-K2): latent of kv_lora_rank + qk_rope_head_dim
#include <algorithm>
#include <set>

#include "core/checked.hpp"
#include "core/model/config_parts.hpp"
#include "core/model/ssm_dims.hpp"

namespace kvplan {

namespace {

bool is_one_of(const std::string& s, std::initializer_list<const char*> list) {
    return std::any_of(list.begin(), list.end(), [&](const char* x) { return s == x; });
}

// Mamba-1 (mamba, falcon_mamba, Jamba's mamba layers): conv state of
// (d_conv - 1) x d_inner plus SSM state d_inner x d_state, as vLLM allocates
// it (vllm/model_executor/layers/mamba/mamba_utils.py, mamba1_state_shape).
LayerPlan mamba1_layer(const ConfigReader& cfg, const ModelDims& dims) {
    const Mamba1Dims m = read_mamba1(cfg, dims);
    LayerPlan p;
    p.spec.kind = LayerKind::State;
    p.spec.conv_state_elements = checked_mul(m.conv - 1, m.inner, "Mamba conv state");
    p.spec.ssm_state_elements = checked_mul(m.inner, m.state, "Mamba SSM state");
    p.spec.state_tp_unit = m.inner;  // d_inner is what TP splits
    p.mixer = Mixer::Mamba1;
    p.ffn = Ffn::None;
    return p;
}

// Mamba-2 (mamba2, Nemotron-H, Bamba, Granite-4): conv state (d_conv - 1) x
// (d_inner + 2 x n_groups x d_state) plus SSM state heads x head_dim x d_state
// (vLLM mamba2_state_shape).
LayerPlan mamba2_layer(const ConfigReader& cfg) {
    const Mamba2Dims m = read_mamba2(cfg);
    LayerPlan p;
    p.spec.kind = LayerKind::State;
    p.spec.conv_state_elements = checked_mul(m.conv - 1, m.conv_dim(), "Mamba-2 conv state");
    p.spec.ssm_state_elements = checked_mul(m.inner(), m.state, "Mamba-2 SSM state");
    p.spec.state_tp_unit = m.heads;
    p.spec.state_groups = m.groups;
    p.spec.group_conv_elements = checked_mul(m.conv - 1, 2 * m.state, "Mamba-2 group conv state");
    p.mixer = Mixer::Mamba2;
    p.ffn = Ffn::None;
    return p;
}

// Gated DeltaNet linear attention (Qwen3-Next "linear_attention" layers):
// conv state (kernel - 1) x (2 x key_dim + value_dim) plus a recurrent state
// of value heads x key head dim x value head dim (vLLM gated_delta_net_state_shape).
LayerPlan linear_attention_layer(const ConfigReader& cfg) {
    const DeltaNetDims g = read_delta_net(cfg);
    LayerPlan p;
    p.spec.kind = LayerKind::State;
    p.spec.conv_state_elements = checked_mul(g.conv - 1, g.conv_dim(), "linear-attention conv state");
    p.spec.ssm_state_elements = checked_mul(checked_mul(g.v_heads, g.k_dim), g.v_dim, "linear-attention recurrent state");
    p.spec.state_tp_unit = g.k_heads;
    p.mixer = Mixer::GatedDeltaNet;
    return p;
}

std::int64_t require_window(const ConfigReader& cfg, const char* why) {
    auto w = cfg.get_int({"sliding_window"}, 1, kMaxTokens);
    if (!w) {
        // Distinguish "negative/zero" (caught by get_int's range) from "absent".
        cfg.fail("sliding_window", std::string("required by ") + why + " but missing or null (expected a positive window in tokens)");
    }
    return *w;
}

// OpenELM: heads, KV heads and MLP width vary by layer (num_query_heads,
// num_kv_heads, ffn_multipliers; transformers-remote modeling_openelm.py).
void apply_openelm_layers(const ConfigReader& cfg, const ModelDims& dims, std::vector<LayerPlan>& plan) {
    const nlohmann::json* values = cfg.find({"ffn_multipliers"});
    std::int64_t divisor = cfg.get_int({"ffn_dim_divisor"}, 1, 1'000'000).value_or(256);
    for (std::size_t i = 0; i < plan.size(); ++i) {
        plan[i].spec.kv_heads = dims.layer_kv_heads[i];
        plan[i].heads = dims.layer_heads[i];
        if (!values) continue;
        if (!values->is_array() || values->size() != plan.size() || !(*values)[i].is_number())
            cfg.fail("ffn_multipliers", "expected one number per layer (" + std::to_string(plan.size()) + ")");
        // A multiple of model_dim: OpenELM's run from 0.5 to 4. Anything outside
        // (0, 64] is a broken config, and would overflow the width below.
        const double multiplier = (*values)[i].get<double>();
        if (!(multiplier > 0 && multiplier <= 64))
            cfg.fail("ffn_multipliers[" + std::to_string(i) + "]",
                     "expected a positive multiple of model_dim up to 64, found " + (*values)[i].dump());
        // make_divisible(v, divisor): round to the nearest multiple, never more than 10% down.
        double v = multiplier * static_cast<double>(dims.hidden);
        std::int64_t width = std::max<std::int64_t>(divisor, static_cast<std::int64_t>(v + divisor / 2.0) / divisor * divisor);
        if (width < 0.9 * v) width += divisor;
        plan[i].intermediate = width;
    }
}

// DeciLM / Nemotron-NAS (Llama-3.3-Nemotron-Super-49B): each block's
// attention is full (heads / n_heads_in_group KV heads), sliding
// (window_length), a single linear map, or absent; its MLP has its own width
// (2/3 x ffn_mult x hidden, rounded up to 256) or is linear or absent
// (transformers-remote modeling_decilm.py, _ffn_mult_to_intermediate_size).
void apply_block_configs(const ConfigReader& cfg, const ModelDims& dims, std::vector<LayerPlan>& plan) {
    const nlohmann::json& blocks = *cfg.find({"block_configs"});
    if (blocks.size() != plan.size())
        cfg.fail("block_configs", "has " + std::to_string(blocks.size()) + " entries but the model has " + std::to_string(plan.size()) + " layers");
    for (std::size_t i = 0; i < plan.size(); ++i) {
        ConfigReader block(blocks[i], cfg.source(), cfg.prefix() + "block_configs[" + std::to_string(i) + "].");
        auto attention = block.child("attention");
        auto ffn = block.child("ffn");
        if (!attention || !ffn) block.fail("attention", "each block needs an \"attention\" and an \"ffn\" object");
        LayerPlan& p = plan[i];
        if (attention->get_bool("no_op").value_or(false) || attention->get_bool("replace_with_linear").value_or(false)) {
            p.mixer = attention->get_bool("no_op").value_or(false) ? Mixer::None : Mixer::Linear;
            p.spec = LayerSpec{};
            p.spec.kind = LayerKind::None;
        } else {
            std::int64_t group = attention->require_int({"n_heads_in_group"}, 1, kMaxHeads);
            if (dims.heads % group != 0)
                attention->fail_relation("n_heads_in_group",
                                         "(" + std::to_string(group) + ") must divide num_attention_heads (" + std::to_string(dims.heads) + ")");
            p.spec.kv_heads = dims.heads / group;
            if (auto window = attention->get_int({"window_length"}, 1, kMaxTokens)) {
                p.spec.kind = LayerKind::Sliding;
                p.spec.window_tokens = *window;
            }
        }
        if (ffn->get_bool("no_op").value_or(false)) {
            p.ffn = Ffn::None;
        } else if (ffn->get_bool("replace_with_linear").value_or(false)) {
            p.ffn = Ffn::Linear;
        } else {
            auto mult = ffn->get_number("ffn_mult");
            if (!mult || *mult <= 0 || *mult > 1000) ffn->fail("ffn_mult", "expected a positive number");
            std::int64_t width = static_cast<std::int64_t>(2.0 * *mult * static_cast<double>(dims.hidden) / 3.0);
            p.intermediate = ceil_div(width, 256) * 256;
        }
    }
}

// The attention layer this model uses when a layer attends at all: full
// attention of the config's KV heads, or MLA's latent.
LayerPlan attention_layer(const ConfigReader& cfg, const ModelDims& dims) {
    LayerPlan attn;
    attn.spec.kind = LayerKind::Full;
    attn.spec.kv_heads = dims.kv_heads;
    attn.spec.k_head_dim = dims.head_dim;
    attn.spec.v_head_dim = dims.head_dim;
    attn.mixer = Mixer::Attention;
    if (auto rank = cfg.get_int({"kv_lora_rank"}, 1, 1'000'000)) {
        // MLA caches the compressed latent c_KV (kv_lora_rank) plus the shared
        // decoupled RoPE key (qk_rope_head_dim), once per token, for all heads:
        // no factor 2 (DeepSeek-V2 paper §2.1; vLLM MLAAttentionSpec; SGLang MLATokenToKVPool).
        std::int64_t rope = cfg.require_int({"qk_rope_head_dim"}, 0, 100'000);
        attn.spec.kind = LayerKind::Mla;
        attn.spec.latent_dim = *rank + rope;
        attn.spec.kv_heads = 1;
        attn.spec.k_head_dim = attn.spec.latent_dim;
        attn.spec.v_head_dim = 0;
        attn.mixer = Mixer::Mla;
    }
    return attn;
}

LayerPlan sliding_layer(const LayerPlan& attn, std::int64_t window) {
    LayerPlan p = attn;
    p.spec.kind = LayerKind::Sliding;
    p.spec.window_tokens = window;
    return p;
}

// A Mamba layer of the flavour the config's keys describe.
LayerPlan mamba_layer(const ConfigReader& cfg, const ModelDims& dims) {
    LayerPlan p = cfg.has("mamba_num_heads") || cfg.has("mamba_n_heads") ? mamba2_layer(cfg) : mamba1_layer(cfg, dims);
    p.ffn = Ffn::Dense;
    return p;
}

// layer_types: one name per layer (Qwen3-Next, gpt-oss, newer Gemma-3).
void kinds_from_layer_types(const ConfigReader& cfg, const ModelDims& dims, const std::vector<std::string>& types, const LayerPlan& attn,
                            std::vector<LayerPlan>& plan) {
    const std::int64_t n = dims.layers;
    if (static_cast<std::int64_t>(types.size()) != n)
        cfg.fail("layer_types",
                 "has " + std::to_string(types.size()) + " entries but the model has " + std::to_string(n) + " layers (num_hidden_layers)");
    for (std::int64_t i = 0; i < n; ++i) {
        const std::string& t = types[static_cast<std::size_t>(i)];
        if (t == "full_attention" || t == "attention") {
            plan[i] = attn;
        } else if (t == "sliding_attention") {
            plan[i] = sliding_layer(attn, require_window(cfg, "layer_types \"sliding_attention\""));
        } else if (t == "chunked_attention") {
            plan[i] = attn;
            plan[i].spec.kind = LayerKind::Chunked;
            plan[i].spec.window_tokens = cfg.require_int({"attention_chunk_size"}, 1, kMaxTokens);
        } else if (t == "linear_attention") {
            plan[i] = linear_attention_layer(cfg);
        } else if (t == "mamba" || t == "mamba2") {
            plan[i] = mamba_layer(cfg, dims);
        } else {
            cfg.fail("layer_types[" + std::to_string(i) + "]", "unknown layer type \"" + t +
                                                                   "\" (expected full_attention, sliding_attention, "
                                                                   "chunked_attention, linear_attention or mamba)");
        }
    }
}

// Nemotron-H's hybrid_override_pattern: one character per block, and each
// block holds one thing: a mixer, or an MLP, or a MoE.
void kinds_from_hybrid_pattern(const ConfigReader& cfg, std::int64_t n, const std::string& pattern, const LayerPlan& attn,
                               std::vector<LayerPlan>& plan) {
    if (static_cast<std::int64_t>(pattern.size()) != n)
        cfg.fail("hybrid_override_pattern",
                 "has " + std::to_string(pattern.size()) + " characters but the model has " + std::to_string(n) + " layers");
    for (std::int64_t i = 0; i < n; ++i) {
        char c = pattern[static_cast<std::size_t>(i)];
        if (c == '*') {
            plan[i] = attn;
            plan[i].ffn = Ffn::None;
        } else if (c == 'M') {
            plan[i] = mamba2_layer(cfg);
        } else if (c == '-' || c == 'E') {
            plan[i] = LayerPlan{};
            plan[i].spec.kind = LayerKind::None;
            plan[i].mixer = Mixer::None;
            plan[i].ffn = c == '-' ? Ffn::Dense : Ffn::Moe;
        } else {
            cfg.fail("hybrid_override_pattern", std::string("unknown character '") + c + "' at layer " + std::to_string(i) +
                                                    " (expected '*' attention, 'M' Mamba, '-' MLP or 'E' MoE)");
        }
    }
}

// Jamba: attention when i % attn_layer_period == attn_layer_offset, else Mamba.
void kinds_from_attn_period(const ConfigReader& cfg, const ModelDims& dims, std::vector<LayerPlan>& plan) {
    std::int64_t period = cfg.require_int({"attn_layer_period"}, 1, kMaxLayers);
    std::int64_t offset = cfg.get_int({"attn_layer_offset"}, 0, kMaxLayers).value_or(0);
    if (offset >= period) cfg.fail("attn_layer_offset", "must be smaller than attn_layer_period (" + std::to_string(period) + ")");
    for (std::int64_t i = 0; i < dims.layers; ++i) {
        if (i % period != offset) {
            plan[i] = mamba1_layer(cfg, dims);
            plan[i].ffn = Ffn::Dense;
        }
    }
}

// Bamba/Granite-4/Zamba-style layers_block_type: "attention" or "mamba" per layer.
void kinds_from_block_types(const ConfigReader& cfg, const ModelDims& dims, const std::vector<std::string>& blocks, std::vector<LayerPlan>& plan) {
    const std::int64_t n = dims.layers;
    if (static_cast<std::int64_t>(blocks.size()) != n)
        cfg.fail("layers_block_type", "has " + std::to_string(blocks.size()) + " entries but the model has " + std::to_string(n) + " layers");
    for (std::int64_t i = 0; i < n; ++i) {
        const std::string& b = blocks[static_cast<std::size_t>(i)];
        if (b == "attention") continue;
        if (b != "mamba") cfg.fail("layers_block_type[" + std::to_string(i) + "]", "unknown block type \"" + b + "\" (expected attention or mamba)");
        plan[i] = mamba_layer(cfg, dims);
    }
}

// Llama-4: layers with RoPE use chunked local attention; NoPE layers
// (no_rope_layers[i] == 0, by default every no_rope_layer_interval-th)
// attend over the full context (transformers Llama4TextAttention).
void kinds_from_attention_chunks(const ConfigReader& cfg, std::int64_t n, std::int64_t chunk, std::vector<LayerPlan>& plan) {
    std::vector<std::int64_t> rope;
    if (auto given = cfg.get_int_list("no_rope_layers", 0, 1); given && !given->empty()) {
        if (static_cast<std::int64_t>(given->size()) != n)
            cfg.fail("no_rope_layers", "has " + std::to_string(given->size()) + " entries but the model has " + std::to_string(n) + " layers");
        rope = *given;
    } else {
        std::int64_t interval = cfg.get_int({"no_rope_layer_interval"}, 1, kMaxLayers).value_or(4);
        for (std::int64_t i = 0; i < n; ++i) rope.push_back((i + 1) % interval != 0 ? 1 : 0);
    }
    for (std::int64_t i = 0; i < n; ++i)
        if (rope[i]) {
            plan[i].spec.kind = LayerKind::Chunked;
            plan[i].spec.window_tokens = chunk;
        }
}

// Which kind each layer is: the first rule of the header's list that the
// config's keys (or its model_type) select; none leaves every layer `attn`.
// Returns the key of the rule applied ("model_type" for a family rule).
const char* assign_layer_kinds(const ConfigReader& cfg, const ModelDims& dims, const LayerPlan& attn, std::vector<LayerPlan>& plan) {
    const std::string& type = dims.model_type;
    const std::int64_t n = dims.layers;
    if (auto types = cfg.get_string_list("layer_types")) {
        kinds_from_layer_types(cfg, dims, *types, attn, plan);
        return "layer_types";
    }
    if (auto interval = cfg.get_int({"full_attention_interval"}, 1, kMaxLayers)) {
        // Qwen3-Next: every interval-th layer is full attention, the rest Gated DeltaNet.
        for (std::int64_t i = 0; i < n; ++i)
            if ((i + 1) % *interval != 0) plan[i] = linear_attention_layer(cfg);
        return "full_attention_interval";
    }
    if (auto pattern = cfg.get_string("hybrid_override_pattern")) {
        kinds_from_hybrid_pattern(cfg, n, *pattern, attn, plan);
        return "hybrid_override_pattern";
    }
    if (cfg.has("attn_layer_period")) {
        kinds_from_attn_period(cfg, dims, plan);
        return "attn_layer_period";
    }
    if (auto blocks = cfg.get_string_list("layers_block_type")) {
        kinds_from_block_types(cfg, dims, *blocks, plan);
        return "layers_block_type";
    }
    if (is_one_of(type, {"mamba", "falcon_mamba"})) {
        for (auto& p : plan) p = mamba1_layer(cfg, dims);
        return "model_type";
    }
    if (type == "mamba2") {
        for (auto& p : plan) p = mamba2_layer(cfg);
        return "model_type";
    }
    if (type == "gemma2") {
        for (std::int64_t i = 0; i < n; i += 2) plan[i] = sliding_layer(attn, require_window(cfg, "gemma2's alternating layers"));
        return "model_type";
    }
    if (auto pat = cfg.get_int({"sliding_window_pattern", "_sliding_window_pattern"}, 1, kMaxLayers)) {
        std::int64_t window = require_window(cfg, "sliding_window_pattern");
        for (std::int64_t i = 0; i < n; ++i)
            if ((i + 1) % *pat != 0) plan[i] = sliding_layer(attn, window);
        return "sliding_window_pattern";
    }
    if (is_one_of(type, {"mistral", "mixtral", "phi3", "phimoe", "starcoder2"})) {
        if (auto window = cfg.get_int({"sliding_window"}, 1, kMaxTokens))
            for (auto& p : plan) p = sliding_layer(attn, *window);
        return "model_type";
    }
    if (is_one_of(type, {"qwen2", "qwen3", "qwen2_moe", "qwen3_moe"})) {
        if (cfg.get_bool("use_sliding_window").value_or(false)) {
            std::int64_t window = require_window(cfg, "use_sliding_window");
            std::int64_t first = cfg.get_int({"max_window_layers"}, 0, kMaxLayers).value_or(n);
            for (std::int64_t i = first; i < n; ++i) plan[i] = sliding_layer(attn, window);
        }
        return "model_type";
    }
    if (auto chunk = cfg.get_int({"attention_chunk_size"}, 1, kMaxTokens)) {
        kinds_from_attention_chunks(cfg, n, *chunk, plan);
        return "attention_chunk_size";
    }
    return "model_type";
}

bool attends(const LayerPlan& p) {
    return p.mixer == Mixer::Attention || p.mixer == Mixer::Mla || p.mixer == Mixer::Cross;
}

// A Mamba-family config has no attention fields (heads, KV heads, head
// size), so a rule that asks it for attention layers cannot be sized: refuse
// it, naming the rule's key, rather than read dimensions that are not there.
void refuse_attention_without_heads(const ConfigReader& cfg, const ModelDims& dims, const char* rule, const std::vector<LayerPlan>& plan) {
    if (dims.heads > 0) return;
    for (std::size_t i = 0; i < plan.size(); ++i)
        if (attends(plan[i]))
            cfg.fail(rule, "makes layer " + std::to_string(i) + " an attention layer, but a " + dims.model_type +
                               " config has no attention fields (num_attention_heads, num_key_value_heads); its layers must all be Mamba");
}

// mllama: the listed layers cross-attend to the vision encoder's tokens.
void mark_cross_attention(const ConfigReader& cfg, std::int64_t n, std::vector<LayerPlan>& plan) {
    auto cross = cfg.get_int_list("cross_attention_layers", 0, kMaxLayers);
    if (!cross) return;
    for (std::int64_t idx : *cross) {
        if (idx >= n)
            cfg.fail("cross_attention_layers",
                     "expected layer indices below " + std::to_string(n) + " (num_hidden_layers), found " + std::to_string(idx));
        plan[idx].spec.kind = LayerKind::Cross;
        plan[idx].mixer = Mixer::Cross;
    }
}

// Whether layer i's feed-forward is a mixture of experts, by the family's key.
bool moe_at(const ConfigReader& cfg, std::int64_t i) {
    if (auto first = cfg.get_int({"first_k_dense_replace"}, 0, kMaxLayers)) {  // DeepSeek
        std::int64_t freq = cfg.get_int({"moe_layer_freq"}, 1, kMaxLayers).value_or(1);
        return i >= *first && i % freq == 0;
    }
    if (auto period = cfg.get_int({"expert_layer_period"}, 1, kMaxLayers)) {  // Jamba
        return i % *period == cfg.get_int({"expert_layer_offset"}, 0, kMaxLayers).value_or(0);
    }
    if (auto step = cfg.get_int({"interleave_moe_layer_step"}, 1, kMaxLayers)) {  // Llama-4
        return (i + 1) % *step == 0;
    }
    if (auto step = cfg.get_int({"decoder_sparse_step"}, 1, kMaxLayers)) {  // Qwen-MoE
        auto dense = cfg.get_int_list("mlp_only_layers", 0, kMaxLayers).value_or(std::vector<std::int64_t>{});
        return std::find(dense.begin(), dense.end(), i) == dense.end() && (i + 1) % *step == 0;
    }
    return true;  // Mixtral, gpt-oss, ...: every layer
}

// Which dense feed-forwards are experts (Nemotron-H's pattern already says).
void mark_moe_layers(const ConfigReader& cfg, const ModelDims& dims, std::vector<LayerPlan>& plan) {
    if (dims.experts <= 0 || cfg.has("hybrid_override_pattern")) return;
    for (std::int64_t i = 0; i < dims.layers; ++i)
        if (plan[i].ffn == Ffn::Dense && moe_at(cfg, i)) plan[i].ffn = Ffn::Moe;
}

}  // namespace

// The recipe: the attention layer, each layer's kind, the per-layer shapes
// (OpenELM's lists, DeciLM's block_configs), cross-attention, experts.
std::vector<LayerPlan> plan_layers(const ConfigReader& cfg, const ModelDims& dims) {
    const LayerPlan attn = attention_layer(cfg, dims);
    std::vector<LayerPlan> plan(static_cast<std::size_t>(dims.layers), attn);
    refuse_attention_without_heads(cfg, dims, assign_layer_kinds(cfg, dims, attn, plan), plan);
    if (!dims.layer_kv_heads.empty()) apply_openelm_layers(cfg, dims, plan);
    if (cfg.is_array("block_configs")) apply_block_configs(cfg, dims, plan);
    mark_cross_attention(cfg, dims.layers, plan);
    refuse_attention_without_heads(cfg, dims, "cross_attention_layers", plan);
    mark_moe_layers(cfg, dims, plan);
    return plan;
}

}  // namespace kvplan
