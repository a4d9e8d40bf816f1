// Step 3 of parsing: every learned tensor of the language model, from the
// config's shapes alone, the way transformers builds the module for the
// model_type. Counts learned parameters only: no rotary inv_freq buffers, no
// GPT-2 causal-mask buffers, no stored copies of tied heads, no MTP layers
// (they matter because the HF Hub's safetensors totals, the parameter count
// on a model's page, contain some of them).
// Checked against the published exact counts in tests/core/model/param_count_test.cpp.
#include <map>
#include <tuple>

#include "core/checked.hpp"
#include "core/model/config_parts.hpp"
#include "core/model/ssm_dims.hpp"

namespace kvplan {

bool known_family(const std::string& type) {
    static const char* const known[] = {"llama",        "mistral",      "mixtral",     "qwen2",       "qwen2_moe",
                                        "qwen3",        "qwen3_moe",    "qwen3_next",  "phi3",        "phimoe",
                                        "gemma",        "gemma2",       "gemma3",      "gemma3_text", "deepseek_v2",
                                        "deepseek_v3",  "kimi_k2",      "gpt_oss",     "llama4_text", "mllama_text_model",
                                        "mllama",       "jamba",        "nemotron_h",  "mamba",       "mamba2",
                                        "falcon_mamba", "gpt2",         "gpt_bigcode", "gptj",        "phi",
                                        "falcon",       "starcoder2",   "cohere",      "cohere2",     "chatglm",
                                        "openelm",      "nemotron-nas", "deci"};
    for (const char* k : known)
        if (type == k) return true;
    return false;
}

FamilyTraits family_traits(const std::string& type, const ConfigReader& cfg) {
    FamilyTraits t;
    t.tie_default = true;  // transformers.PretrainedConfig's default
    auto is = [&](std::initializer_list<const char*> names) {
        for (const char* n : names)
            if (type == n) return true;
        return false;
    };
    if (is({"llama", "mistral", "mixtral", "qwen3", "qwen3_moe", "phi3", "deepseek_v2", "deepseek_v3", "kimi_k2", "gpt_oss", "llama4_text",
            "mllama_text_model", "jamba", "nemotron_h", "qwen3_next", "mamba2", "nemotron-nas", "deci"})) {
        t.tie_default = false;
    }
    if (is({"qwen2", "qwen2_moe"})) {
        t.qkv_bias = true;
        t.tie_default = false;
    }
    if (is({"qwen3", "qwen3_moe", "gemma3", "gemma3_text", "qwen3_next"})) t.qk_norm = true;
    if (is({"gemma2", "gemma3", "gemma3_text"})) t.norms_per_layer = 4;
    if (is({"gpt2", "gpt_bigcode"})) {
        t.gated_mlp = false;
        t.layer_norm = true;
        t.qkv_bias = t.o_bias = t.mlp_bias = true;
        t.learned_positions = true;
    }
    if (type == "gptj") {
        t.gated_mlp = false;
        t.layer_norm = true;
        t.mlp_bias = true;
        t.norms_per_layer = 1;
        t.lm_head_bias = true;
        t.tie_default = false;
    }
    if (type == "phi") {
        t.gated_mlp = false;
        t.layer_norm = true;
        t.qkv_bias = t.o_bias = t.mlp_bias = true;
        t.norms_per_layer = 1;
        t.lm_head_bias = true;
        t.tie_default = false;
    }
    if (type == "falcon") {
        // Falcon: one LayerNorm per block in the parallel-attention layout, two
        // (ln_attn, ln_mlp) in the new decoder architecture, two when sequential.
        t.gated_mlp = false;
        t.layer_norm = true;
        bool new_arch = cfg.get_bool("new_decoder_architecture").value_or(false);
        bool parallel = cfg.get_bool("parallel_attn").value_or(true);
        t.norms_per_layer = (new_arch || !parallel) ? 2 : 1;
        bool bias = cfg.get_bool("bias").value_or(false);
        t.qkv_bias = t.o_bias = t.mlp_bias = bias;
    }
    if (type == "starcoder2") {
        t.gated_mlp = false;
        t.layer_norm = true;
        bool bias = cfg.get_bool("use_bias").value_or(true);
        t.qkv_bias = t.o_bias = t.mlp_bias = bias;
    }
    if (is({"cohere", "cohere2"})) {
        t.norms_per_layer = 1;
        t.qk_norm = false;
    }
    if (type == "chatglm") {
        t.qkv_bias = cfg.get_bool("add_qkv_bias").value_or(false);
        t.tie_default = false;
    }
    if (type == "nemotron_h") t.gated_mlp = false;  // relu^2 up + down
    if (type == "phimoe") {                         // transformers PhiMoE: LayerNorm with bias, biased lm_head, untied
        t.layer_norm = true;
        t.lm_head_bias = true;
        t.tie_default = false;
    }
    if (type == "gpt_oss") t.attention_sinks = true;
    if (type == "openelm") t.qk_norm = cfg.get_bool("normalize_qk_projections").value_or(false);
    if (type == "qwen3_next") t.gated_attention = true;           // transformers Qwen3NextAttention
    if (type == "mllama_text_model") t.extra_embedding_rows = 8;  // MllamaTextModel: Embedding(vocab_size + 8, ...)
    // Explicit flags in the config win over the family's defaults.
    if (auto b = cfg.get_bool("attention_bias")) t.qkv_bias = t.o_bias = *b;
    if (auto b = cfg.get_bool("mlp_bias")) t.mlp_bias = *b;
    return t;
}

namespace {

// Collects tensors, merging identical ones so each line reads "q_proj
// [4096 x 4096] x 32 layers" rather than 32 lines.
class TensorList {
public:
    // `layer`: the decoder layer adding it (ParamTensor::layers); -1 for none.
    void add(ParamPart part, const std::string& name, std::int64_t rows, std::int64_t cols, std::int64_t copies, bool linear,
             std::optional<Dtype> fixed = std::nullopt, std::int64_t max_tp_split = 0, std::int64_t layer = -1) {
        if (rows == 0 || cols == 0 || copies == 0) return;
        auto key = std::make_tuple(static_cast<int>(part), name, rows, cols, linear, fixed ? static_cast<int>(*fixed) : -1, max_tp_split);
        auto it = index_.find(key);
        if (it != index_.end()) {
            ParamTensor& t = tensors_[it->second];
            t.copies = checked_add(t.copies, copies, "tensor copies");
            if (layer >= 0 && (t.layers.empty() || t.layers.back() != layer)) t.layers.push_back(layer);
            return;
        }
        index_[key] = tensors_.size();
        tensors_.push_back(ParamTensor{part, name, rows, cols, copies, linear, fixed, max_tp_split, {}});
        if (layer >= 0) tensors_.back().layers.push_back(layer);
    }
    void matrix(ParamPart part, const std::string& name, std::int64_t out, std::int64_t in, std::int64_t copies = 1) {
        add(part, name, out, in, copies, true);
    }
    void vector(ParamPart part, const std::string& name, std::int64_t n, std::int64_t copies = 1) { add(part, name, n, 1, copies, false); }
    // A matrix TP splits over at most `max_split` ranks (ParamTensor::max_tp_split).
    void capped_matrix(ParamPart part, const std::string& name, std::int64_t out, std::int64_t in, std::int64_t max_split) {
        add(part, name, out, in, 1, true, std::nullopt, max_split);
    }
    void capped_vector(ParamPart part, const std::string& name, std::int64_t n, std::int64_t max_split) {
        add(part, name, n, 1, 1, false, std::nullopt, max_split);
    }
    std::vector<ParamTensor> take() { return std::move(tensors_); }

private:
    std::vector<ParamTensor> tensors_;
    std::map<std::tuple<int, std::string, std::int64_t, std::int64_t, bool, int, std::int64_t>, std::size_t> index_;
};

void add_norm(TensorList& t, const FamilyTraits& tr, const std::string& name, std::int64_t n) {
    t.vector(ParamPart::Norm, name, n);
    if (tr.layer_norm) t.vector(ParamPart::Norm, name + ".bias", n);
}

void add_attention(TensorList& t, const ModelDims& d, const LayerPlan& layer, bool cross) {
    const FamilyTraits& tr = d.traits;
    const LayerSpec& s = layer.spec;
    const std::int64_t heads = layer.heads > 0 ? layer.heads : d.heads;
    std::int64_t q = checked_mul(heads, d.head_dim);
    std::int64_t kv = checked_mul(s.kv_heads, s.k_head_dim);
    t.matrix(ParamPart::Attention, "q_proj", tr.gated_attention ? 2 * q : q, d.hidden);
    // K and V split by whole KV heads: past kv_heads ranks each holds one head
    // whole (vLLM's and SGLang's QKVParallelLinear, num_kv_head_replicas =
    // tp_size / total_num_kv_heads; TensorRT-LLM's Attention, ceil(kv_heads / tp)).
    t.capped_matrix(ParamPart::Attention, "k_proj", kv, d.hidden, s.kv_heads);
    t.capped_matrix(ParamPart::Attention, "v_proj", kv, d.hidden, s.kv_heads);
    t.matrix(ParamPart::Attention, "o_proj", d.hidden, q);
    if (tr.qkv_bias) {
        t.vector(ParamPart::Attention, "q_proj.bias", q);
        t.capped_vector(ParamPart::Attention, "k_proj.bias", kv, s.kv_heads);
        t.capped_vector(ParamPart::Attention, "v_proj.bias", kv, s.kv_heads);
    }
    if (tr.o_bias) t.vector(ParamPart::Attention, "o_proj.bias", d.hidden);
    if (tr.qk_norm || cross) {  // per-head RMSNorm over head_dim (Qwen3, Gemma-3, mllama cross layers)
        t.vector(ParamPart::Norm, "q_norm", d.head_dim);
        t.vector(ParamPart::Norm, "k_norm", s.k_head_dim);
    }
    if (tr.attention_sinks) t.vector(ParamPart::Attention, "sinks", heads);
    if (cross) {  // mllama: tanh gates on the cross-attention and MLP residuals
        t.vector(ParamPart::Attention, "cross_attn_attn_gate", 1);
        t.vector(ParamPart::Attention, "cross_attn_mlp_gate", 1);
    }
}

// MLA (DeepSeek-V2/V3): low-rank q (when q_lora_rank is set) and a joint
// low-rank KV projection whose output is the cached latent plus the RoPE key.
// The two down-projections (q_a_proj, kv_a_proj_with_mqa) are whole on every
// TP rank in all three engines: vLLM fuses them into fused_qkv_a_proj with
// disable_tp=True (kv_a_proj_with_mqa alone is a ReplicatedLinear without
// q_lora_rank; vllm/model_executor/models/deepseek_v2.py), SGLang into a
// ReplicatedLinear fused_qkv_a_proj_with_mqa (python/sglang/srt/models/
// deepseek_v2.py), TensorRT-LLM into a kv_a_proj_with_mqa Linear with no
// mapping (_torch/models/modeling_deepseekv3.py DeepseekV3Attention). The
// up-projections and o_proj split over TP with the heads.
void add_mla(TensorList& t, const ConfigReader& cfg, const ModelDims& d) {
    std::int64_t rank = cfg.require_int({"kv_lora_rank"}, 1, 1'000'000);
    std::int64_t nope = cfg.require_int({"qk_nope_head_dim"}, 0, 100'000);
    std::int64_t rope = cfg.require_int({"qk_rope_head_dim"}, 0, 100'000);
    std::int64_t v = cfg.require_int({"v_head_dim"}, 1, 100'000);
    std::int64_t qk = nope + rope;
    if (auto q_rank = cfg.get_int({"q_lora_rank"}, 1, 1'000'000)) {
        t.capped_matrix(ParamPart::Attention, "q_a_proj", *q_rank, d.hidden, 1);
        t.vector(ParamPart::Norm, "q_a_layernorm", *q_rank);
        t.matrix(ParamPart::Attention, "q_b_proj", checked_mul(d.heads, qk), *q_rank);
    } else {
        t.matrix(ParamPart::Attention, "q_proj", checked_mul(d.heads, qk), d.hidden);
    }
    t.capped_matrix(ParamPart::Attention, "kv_a_proj_with_mqa", rank + rope, d.hidden, 1);
    t.vector(ParamPart::Norm, "kv_a_layernorm", rank);
    t.matrix(ParamPart::Attention, "kv_b_proj", checked_mul(d.heads, nope + v), rank);
    t.matrix(ParamPart::Attention, "o_proj", d.hidden, checked_mul(d.heads, v));
}

void add_mamba1(TensorList& t, const ConfigReader& cfg, const ModelDims& d) {
    const Mamba1Dims m = read_mamba1(cfg, d);
    t.matrix(ParamPart::Mixer, "in_proj", 2 * m.inner, d.hidden);
    if (m.proj_bias) t.vector(ParamPart::Mixer, "in_proj.bias", 2 * m.inner);
    t.add(ParamPart::Mixer, "conv1d", m.inner, m.conv, 1, false);
    if (m.conv_bias) t.vector(ParamPart::Mixer, "conv1d.bias", m.inner);
    t.matrix(ParamPart::Mixer, "x_proj", m.dt_rank + 2 * m.state, m.inner);
    t.matrix(ParamPart::Mixer, "dt_proj", m.inner, m.dt_rank);
    t.vector(ParamPart::Mixer, "dt_proj.bias", m.inner);
    t.add(ParamPart::Mixer, "A_log", m.inner, m.state, 1, false);
    t.vector(ParamPart::Mixer, "D", m.inner);
    t.matrix(ParamPart::Mixer, "out_proj", d.hidden, m.inner);
    if (m.proj_bias) t.vector(ParamPart::Mixer, "out_proj.bias", d.hidden);
    if (d.model_type == "jamba") {  // Jamba normalises dt, B and C (transformers JambaMambaMixer)
        t.vector(ParamPart::Norm, "dt_layernorm", m.dt_rank);
        t.vector(ParamPart::Norm, "b_layernorm", m.state);
        t.vector(ParamPart::Norm, "c_layernorm", m.state);
    }
}

void add_mamba2(TensorList& t, const ConfigReader& cfg, const ModelDims& d) {
    const Mamba2Dims m = read_mamba2(cfg);
    const std::int64_t in_out = 2 * m.inner() + 2 * m.groups * m.state + m.heads;  // z, x, B, C, dt
    t.matrix(ParamPart::Mixer, "in_proj", in_out, d.hidden);
    if (m.proj_bias) t.vector(ParamPart::Mixer, "in_proj.bias", in_out);
    t.add(ParamPart::Mixer, "conv1d", m.conv_dim(), m.conv, 1, false);
    if (m.conv_bias) t.vector(ParamPart::Mixer, "conv1d.bias", m.conv_dim());
    t.vector(ParamPart::Mixer, "dt_bias", m.heads);
    t.vector(ParamPart::Mixer, "A_log", m.heads);
    t.vector(ParamPart::Mixer, "D", m.heads);
    t.vector(ParamPart::Norm, "mixer.norm", m.inner());
    t.matrix(ParamPart::Mixer, "out_proj", d.hidden, m.inner());
    if (m.proj_bias) t.vector(ParamPart::Mixer, "out_proj.bias", d.hidden);
}

// Qwen3-Next Gated DeltaNet (transformers Qwen3NextGatedDeltaNet).
void add_gated_delta_net(TensorList& t, const ConfigReader& cfg, const ModelDims& d) {
    const DeltaNetDims g = read_delta_net(cfg);
    t.matrix(ParamPart::Mixer, "in_proj_qkvz", 2 * g.key_dim() + 2 * g.value_dim(), d.hidden);
    t.matrix(ParamPart::Mixer, "in_proj_ba", 2 * g.v_heads, d.hidden);
    t.add(ParamPart::Mixer, "conv1d", g.conv_dim(), g.conv, 1, false);
    t.vector(ParamPart::Mixer, "dt_bias", g.v_heads);
    t.vector(ParamPart::Mixer, "A_log", g.v_heads);
    t.vector(ParamPart::Norm, "mixer.norm", g.v_dim);
    t.matrix(ParamPart::Mixer, "out_proj", d.hidden, g.value_dim());
}

void add_mlp(TensorList& t, const FamilyTraits& tr, ParamPart part, const std::string& prefix, std::int64_t hidden, std::int64_t inter,
             std::int64_t copies = 1) {
    if (tr.gated_mlp) t.add(part, prefix + "gate_proj", inter, hidden, copies, true);
    t.add(part, prefix + "up_proj", inter, hidden, copies, true);
    t.add(part, prefix + "down_proj", hidden, inter, copies, true);
    if (tr.mlp_bias) {
        if (tr.gated_mlp) t.add(part, prefix + "gate_proj.bias", inter, 1, copies, false);
        t.add(part, prefix + "up_proj.bias", inter, 1, copies, false);
        t.add(part, prefix + "down_proj.bias", hidden, 1, copies, false);
    }
}

void add_moe(TensorList& t, const ConfigReader& cfg, const ModelDims& d) {
    const FamilyTraits& tr = d.traits;
    std::int64_t inter = cfg.get_int({"moe_intermediate_size", "expert_intermediate_size"}, 1, kMaxHidden * 64).value_or(d.intermediate);
    t.matrix(ParamPart::Router, "router", d.experts, d.hidden);
    FamilyTraits expert = tr;
    if (d.model_type == "gpt_oss") {  // gpt-oss: biased router and experts
        t.vector(ParamPart::Router, "router.bias", d.experts);
        expert.mlp_bias = true;
    }
    // DeepSeek-V3's aux-loss-free routing bias (topk_method noaux_tc), stored
    // fp32. transformers' DeepseekV3 (and Kimi-K2) always has it, and their
    // configs may omit topk_method.
    std::string topk = cfg.get_string("topk_method").value_or(d.model_type == "deepseek_v3" || d.model_type == "kimi_k2" ? "noaux_tc" : "");
    if (topk == "noaux_tc") t.add(ParamPart::Router, "e_score_correction_bias", d.experts, 1, 1, false, Dtype::Fp32);
    add_mlp(t, expert, ParamPart::Experts, "experts.", d.hidden, inter, d.experts);

    // Shared experts, always active.
    if (auto n = cfg.get_int({"n_shared_experts", "num_shared_experts"}, 0, kMaxExperts); n && *n > 0) {
        add_mlp(t, tr, ParamPart::SharedExperts, "shared_experts.", d.hidden, checked_mul(*n, inter));
    } else if (auto s = cfg.get_int({"shared_expert_intermediate_size"}, 1, kMaxHidden * 64); s) {  // Qwen2-MoE
        add_mlp(t, tr, ParamPart::SharedExperts, "shared_expert.", d.hidden, *s);
        t.matrix(ParamPart::SharedExperts, "shared_expert_gate", 1, d.hidden);
    } else if (d.model_type == "llama4_text") {  // Llama-4: one shared expert of intermediate_size
        add_mlp(t, tr, ParamPart::SharedExperts, "shared_expert.", d.hidden, d.intermediate);
    }
}

}  // namespace

std::vector<ParamTensor> count_params(const ConfigReader& cfg, const ModelDims& d, const std::vector<LayerPlan>& plan, bool tied,
                                      std::vector<std::string>& notes) {
    const FamilyTraits& tr = d.traits;
    TensorList all;

    for (std::size_t index = 0; index < plan.size(); ++index) {
        const LayerPlan& layer = plan[index];
        TensorList t;  // one layer's tensors, then merged into `all`
        bool mixes = layer.mixer != Mixer::None;
        bool ffn = layer.ffn != Ffn::None;
        int norms = (mixes && ffn) ? tr.norms_per_layer : (mixes || ffn) ? 1 : 0;
        for (int i = 0; i < norms; ++i) add_norm(t, tr, "layernorm" + std::to_string(i), d.hidden);
        switch (layer.mixer) {
            case Mixer::Attention: add_attention(t, d, layer, false); break;
            case Mixer::Cross: add_attention(t, d, layer, true); break;
            case Mixer::Linear: t.matrix(ParamPart::Attention, "linear_attn", d.hidden, d.hidden); break;
            case Mixer::Mla: add_mla(t, cfg, d); break;
            case Mixer::Mamba1: add_mamba1(t, cfg, d); break;
            case Mixer::Mamba2: add_mamba2(t, cfg, d); break;
            case Mixer::GatedDeltaNet: add_gated_delta_net(t, cfg, d); break;
            case Mixer::None: break;
        }
        if (layer.ffn == Ffn::Dense) {
            // Llama-4 names its dense-layer width intermediate_size_mlp.
            std::int64_t inter =
                layer.intermediate > 0 ? layer.intermediate : cfg.get_int({"intermediate_size_mlp"}, 1, kMaxHidden * 64).value_or(d.intermediate);
            add_mlp(t, tr, ParamPart::Mlp, "mlp.", d.hidden, inter);
        } else if (layer.ffn == Ffn::Linear) {
            t.matrix(ParamPart::Mlp, "linear_mlp", d.hidden, d.hidden);
        } else if (layer.ffn == Ffn::Moe) {
            add_moe(t, cfg, d);
        }
        for (const ParamTensor& p : t.take())
            all.add(p.part, p.name, p.rows, p.cols, p.copies, p.linear, p.fixed_dtype, p.max_tp_split, static_cast<std::int64_t>(index));
    }

    all.add(ParamPart::Embedding, "embed_tokens", d.vocab + tr.extra_embedding_rows, d.hidden, 1, false);
    if (tr.learned_positions) {
        std::int64_t positions = cfg.require_int({"n_positions", "max_position_embeddings"}, 1, kMaxTokens);
        all.add(ParamPart::Embedding, "position_embeddings", positions, d.hidden, 1, false);
    }
    add_norm(all, tr, "final_norm", d.hidden);
    if (!tied) {
        all.add(ParamPart::Head, "lm_head", d.vocab, d.hidden, 1, false);
        if (tr.lm_head_bias) all.vector(ParamPart::Head, "lm_head.bias", d.vocab);
    }
    if (auto mtp = cfg.get_int({"num_nextn_predict_layers"}, 0, kMaxLayers); mtp && *mtp > 0)
        notes.push_back("not counted: " + std::to_string(*mtp) +
                        " multi-token-prediction layer(s) (num_nextn_predict_layers), which engines load only for speculative decoding");
    return all.take();
}

}  // namespace kvplan
