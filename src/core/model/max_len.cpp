#include "core/model/max_len.hpp"

#include <cmath>
#include <vector>

#include "core/digits.hpp"
#include "core/model/config_parts.hpp"

namespace kvplan {

namespace {

// One RoPE setting: its type and the figures the length rule reads.
struct Rope {
    std::string type = "default";
    std::optional<double> factor;
    std::optional<std::int64_t> original_max;
};

Rope read_rope(const ConfigReader& r) {
    Rope out;
    // patch_rope_scaling renames a legacy "type" to "rope_type".
    if (auto t = r.get_string("rope_type")) out.type = *t;
    else if (auto t2 = r.get_string("type")) out.type = *t2;
    out.factor = r.get_number("factor");
    if (out.factor && !(*out.factor > 0 && *out.factor <= 1e6)) r.fail("factor", "expected a number in (0, 1e6]");
    out.original_max = r.get_int({"original_max_position_embeddings"}, 1, kMaxTokens);
    if (out.type == "yarn" && !out.original_max)
        r.fail("original_max_position_embeddings", "missing: YaRN scaling needs it (vLLM scales it by factor)");
    return out;
}

// rope_scaling / rope_parameters: one setting, or (transformers v5) one per
// layer type ({"full_attention": {...}, "sliding_attention": {...}}).
std::vector<Rope> rope_settings(const ConfigReader& cfg) {
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
        auto child = cfg.child(key);
        if (!child) continue;
        std::vector<Rope> out;
        if (child->has("rope_type") || child->has("type") || child->has("factor")) return {read_rope(*child)};
        for (const char* layer_type : {"full_attention", "sliding_attention", "chunked_attention", "linear_attention"})
            if (auto nested = child->child(layer_type)) out.push_back(read_rope(*nested));
        return out;
    }
    return {};
}

std::string number(double v) {
    return v == std::floor(v) ? group_digits(static_cast<std::int64_t>(v)) : std::to_string(v);
}

}  // namespace

DerivedMaxLen derive_max_model_len(const ConfigReader& cfg, const std::string& model_type, std::optional<std::int64_t> tokenizer_max) {
    DerivedMaxLen out;
    for (const char* key : {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length", "max_target_positions",
                            "max_sequence_length", "max_seq_length", "seq_len"}) {
        auto v = cfg.get_int({key}, 1, kMaxTokens);
        if (v && (out.tokens == 0 || *v < out.tokens)) out = {*v, key, ""};
    }
    if (auto m = cfg.get_int({"model_max_length"}, 1, kMaxTokens)) out = {*m, "model_max_length", ""};
    for (const char* key : {"n_ctx", "max_context_length"})
        if (out.tokens == 0)
            if (auto v = cfg.get_int({key}, 1, kMaxTokens)) out = {*v, key, ""};
    if (tokenizer_max && out.tokens > 0 && *tokenizer_max < out.tokens) {
        out.note = "max_model_len " + group_digits(*tokenizer_max) + ": tokenizer_config.json's model_max_length, below the config's " + out.key +
                   " (" + group_digits(out.tokens) + "), as vLLM takes the smaller";
        out.tokens = *tokenizer_max;
        out.key = "tokenizer model_max_length";
    }
    if (out.tokens == 0 || model_type.find("gemma3") != std::string::npos) return out;

    const std::vector<Rope> ropes = rope_settings(cfg);
    double factor = 1.0;
    std::optional<std::int64_t> base;
    bool scaled = false, longrope = false;
    for (const Rope& r : ropes) {
        if (r.type == "longrope" || r.type == "su") longrope = true;
        if (r.type == "su" || r.type == "longrope" || r.type == "llama3") continue;
        if (r.factor) factor = *r.factor;
        if (r.type == "yarn") base = r.original_max;
        scaled = scaled || factor != 1.0 || base.has_value();
    }
    if (scaled) {
        const double length = static_cast<double>(base.value_or(out.tokens)) * factor;
        if (!(length >= 1 && length <= static_cast<double>(kMaxTokens)))
            cfg.fail("rope_scaling.factor", "scales the length to " + number(length) + " tokens (expected at most " + group_digits(kMaxTokens) + ")");
        const auto derived = static_cast<std::int64_t>(length);  // Python's int(): truncation
        out.note = "max_model_len " + group_digits(derived) + " as vLLM derives it: RoPE scaling factor " + number(factor) + " x " +
                   (base ? "original_max_position_embeddings " + group_digits(*base) : out.key + " " + group_digits(out.tokens));
        out.tokens = derived;
    }
    if (longrope)
        if (auto original = cfg.get_int({"original_max_position_embeddings"}, 1, kMaxTokens); original && *original < out.tokens) {
            out.note = "max_model_len " + group_digits(*original) + ": with LongRoPE vLLM defaults to original_max_position_embeddings (" + out.key +
                       " is " + group_digits(out.tokens) + "; pass --max-model-len for more)";
            out.tokens = *original;
            out.key = "original_max_position_embeddings";
        }
    return out;
}

}  // namespace kvplan
