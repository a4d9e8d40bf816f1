#include "cli/model_options.hpp"

#include "core/error.hpp"
#include "core/model/config_parser.hpp"
#include "core/model/config_parts.hpp"
#include "io/model_loader.hpp"
#include "io/presets.hpp"

namespace kvplan {

void add_model_source_options(CLI::App& app, ModelOptions& o) {
    app.add_option("-m,--model", o.model,
                   "config.json path, model folder, Hugging Face repo id (read from the local HF cache), or bundled preset "
                   "(see `kvplan models`)");
    app.add_option("--weights-from", o.weights_from,
                   "auto|files|formula: weight bytes from the checkpoint's safetensors headers or the config's formula "
                   "(auto: the files when the folder holds them)")
        ->check(CLI::IsMember({"auto", "files", "formula"}));
}

void add_model_options(CLI::App& app, ModelOptions& o) {
    add_model_source_options(app, o);
    auto* g = app.add_option_group("hand-built model", "a model with no config file: --layers --kv-heads --head-dim are required together");
    g->add_option("--layers", o.shape.layers, "decoder layers")->check(CLI::Range(std::int64_t{1}, kMaxLayers));
    g->add_option("--kv-heads", o.shape.kv_heads, "K/V heads per layer")->check(CLI::Range(std::int64_t{1}, kMaxHeads));
    g->add_option("--head-dim", o.shape.head_dim, "head dimension")->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000}));
    g->add_option("--hidden", o.shape.hidden, "hidden size (default kv-heads x head-dim)")->check(CLI::Range(std::int64_t{1}, kMaxHidden));
    g->add_option("--heads", o.shape.heads, "attention heads (default hidden / head-dim)")->check(CLI::Range(std::int64_t{1}, kMaxHeads));
    g->add_option("--params", o.shape.params, "parameter count, for weight bytes")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000'000'000'000}));
}

ModelSpec resolve_model(const ModelOptions& o) {
    const ManualShape& s = o.shape;
    bool manual = s.layers || s.kv_heads || s.head_dim || s.hidden || s.heads || s.params;
    if (!o.model.empty() && manual) usage_error("give either --model or a hand-built shape (--layers --kv-heads --head-dim), not both");
    if (!o.model.empty()) {
        ModelSpec spec = load_model(o.model);
        if (o.weights_from == "files" && !spec.stored_weights)
            usage_error("--weights-from files: " + o.model + ": " +
                        (spec.warnings.empty() ? std::string("no safetensors files beside the config") : spec.warnings.front()));
        spec.use_stored_weights = o.weights_from != "formula";
        return spec;
    }
    if (o.weights_from == "files") usage_error("--weights-from files needs --model with a checkpoint folder");
    if (!manual) usage_error("no model: pass --model NAME|PATH (presets: " + preset_names() + ") or --layers N --kv-heads N --head-dim N");
    if (!s.layers) usage_error("hand-built model needs --layers");
    if (!s.kv_heads) usage_error("hand-built model needs --kv-heads");
    if (!s.head_dim) usage_error("hand-built model needs --head-dim");
    return manual_model(o.shape);
}

std::string model_label(const ModelSpec& spec) {
    std::string label = spec.name;
    std::string detail;
    if (spec.source.kind == ModelSourceKind::HfCache) {
        // The repo id and the snapshot's commit, as `git log` abbreviates it; the path is in the source.
        if (!spec.source.revision.empty()) label += "@" + spec.source.revision.substr(0, 12);
        return label + " (HF cache, " + spec.model_type + ")";
    }
    if (auto p = find_preset(spec.name)) detail = p->hf_id + ", ";
    detail += spec.model_type;
    return label + " (" + detail + ")";
}

std::optional<Dtype> parse_dtype_flag(const std::string& flag, const std::string& value) {
    if (value == "auto") return std::nullopt;
    auto d = parse_dtype(value);
    if (!d) usage_error(flag + " " + value + ": unknown dtype (expected auto, fp32, fp16, bf16, fp8, int8 or int4)");
    return d;
}

std::optional<Dtype> parse_state_dtype_flag(const std::string& flag, const std::string& value) {
    if (value == "auto") return std::nullopt;
    auto d = parse_dtype(value);
    if (!d || (*d != Dtype::Fp32 && *d != Dtype::Fp16 && *d != Dtype::Bf16))
        usage_error(flag + " " + value + ": expected auto, fp32, fp16 or bf16 (the dtypes vLLM keeps recurrent state in)");
    return d;
}

}  // namespace kvplan
