// Step 1 of parsing: find the language model's config (top level or nested
// text_config), read its dimensions under every key-name family, check them
// for consistency, then hand over to plan_layers (layer_plan.cpp) and
// count_params (param_count.cpp).
#include "core/model/config_parser.hpp"

#include <map>
#include <numeric>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/model/config_parts.hpp"
#include "core/model/max_len.hpp"

namespace kvplan {

namespace {

// Multimodal wrappers keep the language model under one of these keys
// (Llava, Gemma-3, Llama-4, mllama, Qwen2-VL use text_config).
constexpr const char* kNestedKeys[] = {"text_config", "llm_config", "language_config"};

// transformers fills a nested text_config's missing fields from the config
// class's defaults, and published multimodal configs rely on it (llava-1.5's
// text_config gives no hidden_size at all). kvplan does the same, for the
// classes real multimodal configs nest, and says so in the notes.
const std::map<std::string, std::map<std::string, std::int64_t>>& class_defaults() {
    static const std::map<std::string, std::map<std::string, std::int64_t>> table = {
        // transformers LlamaConfig.__init__ defaults
        {"llama",
         {{"hidden_size", 4096},
          {"intermediate_size", 11008},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"vocab_size", 32000},
          {"max_position_embeddings", 2048}}},
        // transformers MistralConfig
        {"mistral",
         {{"hidden_size", 4096},
          {"intermediate_size", 14336},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"vocab_size", 32000},
          {"max_position_embeddings", 131072}}},
        // transformers Gemma3TextConfig
        {"gemma3_text",
         {{"hidden_size", 2304},
          {"intermediate_size", 9216},
          {"num_hidden_layers", 26},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 4},
          {"head_dim", 256},
          {"vocab_size", 262208},
          {"max_position_embeddings", 131072},
          {"sliding_window", 4096},
          {"sliding_window_pattern", 6}}},
    };
    return table;
}

// Returns a copy of `text` with class defaults filled in for missing keys.
nlohmann::json with_class_defaults(const nlohmann::json& text, const std::string& model_type, const std::string& prefix,
                                   std::vector<std::string>& notes) {
    nlohmann::json out = text;
    auto it = class_defaults().find(model_type);
    if (it == class_defaults().end()) return out;
    for (const auto& [key, value] : it->second) {
        if (out.contains(key) && !out[key].is_null()) continue;
        if (key == "sliding_window_pattern" && (out.contains("layer_types") || out.contains("_sliding_window_pattern"))) continue;
        out[key] = value;
        notes.push_back(prefix + key + " missing: using transformers' " + model_type + " default " + std::to_string(value));
    }
    return out;
}

std::optional<Dtype> read_dtype(const ConfigReader& cfg) {
    for (const char* key : {"torch_dtype", "dtype"}) {
        if (auto text = cfg.get_string(key)) {
            auto d = parse_dtype(*text);
            if (!d) cfg.fail(key, "unknown dtype \"" + *text + "\" (expected float32, float16 or bfloat16)");
            return d;
        }
    }
    return std::nullopt;
}

ModelDims read_dims(const ConfigReader& cfg, const std::string& model_type) {
    ModelDims d;
    d.model_type = model_type;
    bool pure_ssm = model_type == "mamba" || model_type == "mamba2" || model_type == "falcon_mamba";

    d.layers = cfg.require_int({"num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_transformer_layers"}, 1, kMaxLayers);
    d.hidden = cfg.require_int({"hidden_size", "n_embd", "d_model", "dim", "model_dim"}, 1, kMaxHidden);
    d.vocab = cfg.require_int({"padded_vocab_size", "vocab_size", "n_vocab"}, 1, kMaxVocab);

    if (!pure_ssm && cfg.is_array("num_query_heads")) {
        // OpenELM: query and KV heads per layer. The model-wide head count is
        // their gcd: a TP degree must divide every layer's heads.
        d.layer_heads = cfg.require_int_list("num_query_heads", 1, kMaxHeads);
        d.layer_kv_heads = cfg.require_int_list("num_kv_heads", 1, kMaxHeads);
        for (auto* list : {&d.layer_heads, &d.layer_kv_heads})
            if (static_cast<std::int64_t>(list->size()) != d.layers)
                cfg.fail(list == &d.layer_heads ? "num_query_heads" : "num_kv_heads",
                         "has " + std::to_string(list->size()) + " entries but the model has " + std::to_string(d.layers) + " layers");
        for (std::int64_t i = 0; i < d.layers; ++i) {
            if (d.layer_heads[i] % d.layer_kv_heads[i] != 0)
                cfg.fail_relation("num_kv_heads[" + std::to_string(i) + "]", "(" + std::to_string(d.layer_kv_heads[i]) +
                                                                                 ") must divide num_query_heads[" + std::to_string(i) + "] (" +
                                                                                 std::to_string(d.layer_heads[i]) + ")");
            d.heads = std::gcd(d.heads, d.layer_heads[i]);
        }
        d.kv_heads = d.layer_kv_heads.front();
        d.head_dim = cfg.require_int({"head_dim"}, 1, 100'000);
    } else if (!pure_ssm) {
        d.heads = cfg.require_int({"num_attention_heads", "n_head", "n_heads", "num_heads"}, 1, kMaxHeads);

        // K/V heads: explicit count, else MQA flags, else multi-head (= heads).
        std::string used;
        if (model_type == "falcon" && !cfg.get_bool("new_decoder_architecture").value_or(false)) {
            // Old Falcon layout: multi_query decides; num_kv_heads is ignored (transformers FalconAttention).
            d.kv_heads = cfg.get_bool("multi_query").value_or(true) ? 1 : d.heads;
        } else if (auto kv = cfg.get_int({"num_key_value_heads", "num_kv_heads", "n_head_kv", "n_kv_heads"}, 1, kMaxHeads)) {
            d.kv_heads = *kv;
        } else if (auto group = cfg.get_int({"multi_query_group_num"}, 1, kMaxHeads); group && cfg.get_bool("multi_query_attention").value_or(true)) {
            d.kv_heads = *group;  // ChatGLM / GLM-4
        } else if (cfg.get_bool("multi_query").value_or(false)) {
            d.kv_heads = 1;  // GPT-BigCode (StarCoder), Falcon
        } else {
            d.kv_heads = d.heads;
        }
        if (d.heads % d.kv_heads != 0)
            cfg.fail_relation("num_key_value_heads",
                              "(" + std::to_string(d.kv_heads) + ") must divide num_attention_heads (" + std::to_string(d.heads) + ")");

        // head_dim: explicit head_dim / kv_channels win over hidden / heads
        // (Gemma: 256 != 3072/16; Mistral-Nemo: 128 != 5120/32; Qwen3).
        if (auto hd = cfg.get_int({"head_dim", "kv_channels", "attention_head_dim"}, 1, 100'000)) {
            d.head_dim = *hd;
        } else if (cfg.has("kv_lora_rank")) {
            // MLA: a query head is qk_nope_head_dim + qk_rope_head_dim wide (e.g. 128 + 64).
            d.head_dim = cfg.require_int({"qk_nope_head_dim"}, 0, 100'000) + cfg.require_int({"qk_rope_head_dim"}, 0, 100'000);
        } else {
            if (d.hidden % d.heads != 0)
                cfg.fail_relation("hidden_size", "(" + std::to_string(d.hidden) + ") is not divisible by num_attention_heads (" +
                                                     std::to_string(d.heads) + ") and no head_dim is given");
            d.head_dim = d.hidden / d.heads;
        }
    }

    // Dense MLP width: intermediate_size / n_inner / ffn_hidden_size; GPT-2,
    // GPT-J and Falcon default to 4 x hidden (n_inner null).
    if (auto inter = cfg.get_int({"intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"}, 1, kMaxHidden * 64)) d.intermediate = *inter;
    else d.intermediate = 4 * d.hidden;

    if (auto e = cfg.get_int({"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"}, 0, kMaxExperts)) d.experts = *e;
    if (d.experts > 0) {
        d.experts_per_token = cfg.require_int({"num_experts_per_tok", "experts_per_token", "moe_top_k", "num_experts_per_token"}, 1, d.experts);
    }
    d.traits = family_traits(model_type, cfg);
    return d;
}

ModelSpec parse_config_fields(const nlohmann::json& config, const std::string& source, std::optional<std::int64_t> tokenizer_max) {
    ConfigReader top(config, source);
    ModelSpec spec;
    spec.name = source;
    if (auto archs = top.get_string_list("architectures"); archs && !archs->empty()) spec.architecture = archs->front();
    std::string top_type = top.get_string("model_type").value_or("");

    // The language model: the top level, or a nested text_config.
    nlohmann::json text = config;
    std::string prefix;
    for (const char* key : kNestedKeys) {
        if (auto child = top.child(key)) {
            prefix = std::string(key) + ".";
            std::string type = child->get_string("model_type").value_or(top_type);
            text = with_class_defaults(config.at(key), type, prefix, spec.notes);
            if (!text.contains("model_type")) text["model_type"] = type;
            spec.notes.push_back("multimodal config: sizing the language model (" + prefix.substr(0, prefix.size() - 1) +
                                 "); the vision encoder's weights are not counted");
            break;
        }
    }
    ConfigReader cfg(text, source, prefix);
    spec.model_type = cfg.get_string("model_type").value_or(top_type);
    if (spec.model_type.empty()) spec.model_type = "unknown";

    if (!known_family(spec.model_type))
        spec.notes.push_back("model_type \"" + spec.model_type +
                             "\" has no family rules in kvplan: KV sizing follows the config's "
                             "fields, the parameter count assumes a Llama-style block (RMSNorm, gated MLP, no biases)");
    ModelDims dims = read_dims(cfg, spec.model_type);
    spec.hidden = dims.hidden;
    spec.heads = dims.heads;
    spec.head_dim = dims.head_dim;
    spec.vocab = dims.vocab;
    spec.intermediate = dims.intermediate;
    spec.experts = dims.experts;
    spec.experts_per_token = dims.experts_per_token;
    DerivedMaxLen max_len = derive_max_model_len(cfg, spec.model_type, tokenizer_max);
    if (max_len.tokens == 0 && !prefix.empty()) max_len = derive_max_model_len(top, top_type, tokenizer_max);
    spec.max_position_tokens = max_len.tokens;
    if (!max_len.note.empty()) spec.notes.push_back(max_len.note);
    if (spec.max_position_tokens == 0 && spec.model_type == "falcon") {
        // FalconConfig's max_position_embeddings default; falcon-7b's config.json omits it.
        spec.max_position_tokens = 2048;
        spec.notes.push_back("max_position_embeddings missing: using transformers' FalconConfig default 2048");
    }
    spec.checkpoint_dtype = read_dtype(cfg);
    if (!spec.checkpoint_dtype && !prefix.empty()) spec.checkpoint_dtype = read_dtype(top);

    std::vector<LayerPlan> plan = plan_layers(cfg, dims);
    for (const LayerPlan& p : plan) spec.layers.push_back(p.spec);

    bool tied = cfg.get_bool("tie_word_embeddings")
                    .value_or(cfg.get_bool("share_input_output_layers")  // OpenELM's name for it
                                  .value_or(top.get_bool("tie_word_embeddings").value_or(dims.traits.tie_default)));
    spec.tied_embeddings = tied;
    spec.params = count_params(cfg, dims, plan, tied, spec.notes);
    spec.quantization = parse_quantization(top);
    return spec;
}

}  // namespace

ModelSpec parse_model_config(const nlohmann::json& config, const std::string& source, std::optional<std::int64_t> tokenizer_max) {
    return overflow_blames(source, [&] { return parse_config_fields(config, source, tokenizer_max); });
}

ModelSpec manual_model(const ManualShape& s) {
    ModelSpec spec;
    spec.name = "manual";
    spec.model_type = "manual";
    spec.hidden = s.hidden > 0 ? s.hidden : checked_mul(s.kv_heads, s.head_dim, "hidden size");
    if (s.heads == 0 && spec.hidden % s.head_dim != 0)
        usage_error("--hidden (" + std::to_string(spec.hidden) + ") must be a multiple of --head-dim (" + std::to_string(s.head_dim) +
                    "), or give --heads");
    spec.heads = s.heads > 0 ? s.heads : spec.hidden / s.head_dim;
    spec.head_dim = s.head_dim;
    spec.max_position_tokens = s.max_position_tokens;
    spec.checkpoint_dtype = s.dtype;
    if (spec.heads % s.kv_heads != 0)
        usage_error("--kv-heads (" + std::to_string(s.kv_heads) + ") must divide --heads (" + std::to_string(spec.heads) + ")");
    LayerSpec layer;
    layer.kind = LayerKind::Full;
    layer.kv_heads = s.kv_heads;
    layer.k_head_dim = layer.v_head_dim = s.head_dim;
    spec.layers.assign(static_cast<std::size_t>(s.layers), layer);
    if (s.params > 0) spec.params_override = s.params;
    spec.notes.push_back("hand-built model: every layer full attention, shape from flags");
    return spec;
}

}  // namespace kvplan
