#include "report/size_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "report/json_value.hpp"
#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

std::string window_cell(const LayerGroup& g) {
    return g.spec.window_tokens > 0 ? group_digits(g.spec.window_tokens) : std::string("-");
}

// One field list for the headline figures, shared by table and Markdown.
Table headline_table(const SizeResult& r) {
    const KvSizing& kv = r.kv;
    std::string ctx = kv.context_tokens ? group_digits(*kv.context_tokens) + " tokens" : std::string("n/a");
    Table t({"figure", "bytes", "binary units"});
    t.add({"KV per token", group_digits(kv.bytes_per_token), binary_size(kv.bytes_per_token)});
    t.add({"KV per sequence (" + ctx + ")", group_digits(kv.bytes_per_sequence), binary_size(kv.bytes_per_sequence)});
    t.add({"KV for batch of " + group_digits(kv.batch), group_digits(kv.bytes_total), binary_size(kv.bytes_total)});
    t.add({"KV per GPU (tp " + std::to_string(kv.tp) + ")", group_digits(kv.bytes_per_gpu), binary_size(kv.bytes_per_gpu)});
    const std::string format =
        r.weights.quantization == QuantMethod::None ? std::string(dtype_name(r.weights.dtype)) : quant_method_name(r.weights.quantization);
    const bool stored = r.weights.from_files && r.model->stored_weights;
    t.add({stored ? "weights as stored (" + r.model->stored_weights->source + ")" : "weights (" + format + ")", group_digits(r.weights.bytes),
           binary_size(r.weights.bytes)});
    if (r.weights.from_files || (r.model->stored_weights && !r.model->use_stored_weights))
        t.add({"weights by the config's formula (" + format + ")", group_digits(r.weights.formula_bytes), binary_size(r.weights.formula_bytes)});
    return t;
}

Table params_table(const WeightSizing& w) {
    Table t({"part", "params", "bytes", "binary units"});
    for (const WeightPart& p : w.parts) t.add({param_part_name(p.part), group_digits(p.params), group_digits(p.bytes), binary_size(p.bytes)});
    t.add({"total", group_digits(w.params), group_digits(w.bytes), binary_size(w.bytes)});
    return t;
}

// "2 bytes (bf16)", "4/8 bytes (int4)": one element's size in a formula.
std::string element_size(Dtype d) {
    const int bits = dtype_bits(d);
    return bits % 8 == 0 ? fmt::format("{} bytes ({})", bits / 8, dtype_name(d)) : fmt::format("{}/8 bytes ({})", bits, dtype_name(d));
}

bool has_state(const KvSizing& kv) {
    return std::any_of(kv.groups.begin(), kv.groups.end(), [](const LayerGroup& g) { return g.spec.kind == LayerKind::State; });
}

// "KV dtype bf16, context 8,192 tokens, batch 32, tp 1" (+ the state dtypes when the model keeps state).
std::string settings_line(const KvSizing& kv) {
    std::string out = fmt::format("KV dtype {}", dtype_name(kv.kv_dtype));
    if (has_state(kv))
        out += fmt::format(", state dtype {} (conv) / {} (recurrent)", dtype_name(kv.conv_state_dtype), dtype_name(kv.ssm_state_dtype));
    out += fmt::format(", context {}, batch {}, tp {}",
                       kv.context_tokens ? group_digits(*kv.context_tokens) + " tokens" : std::string("n/a (no per-token layers)"),
                       group_digits(kv.batch), kv.tp);
    return out;
}

std::vector<std::string> all_notes(const SizeResult& r) {
    std::vector<std::string> out;
    for (const std::string& n : r.warnings) out.push_back("warning: " + n);
    out.insert(out.end(), r.model->notes.begin(), r.model->notes.end());
    return out;
}

}  // namespace

const Fields<LayerGroup>& layer_group_fields() {
    using J = nlohmann::ordered_json;
    using G = LayerGroup;
    static const Fields<G> fields = {
        {.key = "kind",
         .json = [](const G& g) { return J(layer_kind_name(g.spec.kind)); },
         .header = "layer group",
         .cell = [](const G& g) { return std::string(layer_kind_name(g.spec.kind)); }},
        {.key = "layers",
         .kind = FieldKind::Number,
         .json = [](const G& g) { return J(g.layers); },
         .header = "layers",
         .cell = [](const G& g) { return std::to_string(g.layers); }},
        {.key = "window_tokens",
         .kind = FieldKind::Number,
         .json = [](const G& g) { return g.spec.window_tokens > 0 ? J(g.spec.window_tokens) : J(nullptr); },
         .header = "window",
         .cell = window_cell},
        {.key = "bytes_per_token",
         .kind = FieldKind::Number,
         .json = [](const G& g) { return J(g.bytes_per_token); },
         .header = "KV B/token",
         .cell = [](const G& g) { return group_digits(g.bytes_per_token); }},
        {.key = "state_bytes_per_sequence", .kind = FieldKind::Number, .json = [](const G& g) { return J(g.state_bytes_per_sequence); }},
        {.key = "tokens_held",
         .kind = FieldKind::Number,
         .json = [](const G& g) { return J(g.tokens_held); },
         .header = "tokens held",
         .cell = [](const G& g) { return holds_per_token(g.spec.kind) ? group_digits(g.tokens_held) : "-"; }},
        {.key = "bytes_per_sequence",
         .kind = FieldKind::Number,
         .json = [](const G& g) { return J(g.bytes_per_sequence); },
         .header = "B/sequence",
         .cell = [](const G& g) { return group_digits(g.bytes_per_sequence); }},
        {.key = "bytes_per_sequence_per_gpu",
         .kind = FieldKind::Number,
         .json = [](const G& g) { return J(g.bytes_per_sequence_per_gpu); },
         .header = "B/sequence per GPU",
         .cell = [](const G& g) { return group_digits(g.bytes_per_sequence_per_gpu); }},
    };
    return fields;
}

std::vector<std::string> formula_lines(const KvSizing& kv) {
    std::vector<std::string> out;
    const std::string elem = element_size(kv.kv_dtype);
    for (const LayerGroup& g : kv.groups) {
        std::string kind = layer_kind_name(g.spec.kind);
        switch (g.spec.kind) {
            case LayerKind::Full:
            case LayerKind::Sliding:
            case LayerKind::Chunked: {
                std::string dims = g.spec.k_head_dim == g.spec.v_head_dim
                                       ? fmt::format("2 (K,V) x {} layers x {} kv_heads x {} head_dim", g.layers, g.spec.kv_heads, g.spec.k_head_dim)
                                       : fmt::format("{} layers x {} kv_heads x ({} K + {} V head_dim)", g.layers, g.spec.kv_heads, g.spec.k_head_dim,
                                                     g.spec.v_head_dim);
                std::string held =
                    g.spec.window_tokens > 0 ? fmt::format("; each layer holds min(context, {}) tokens", group_digits(g.spec.window_tokens)) : "";
                out.push_back(fmt::format("{}: {} x {} = {} B/token{}", kind, dims, elem, group_digits(g.bytes_per_token), held));
                break;
            }
            case LayerKind::Mla:
                out.push_back(
                    fmt::format("mla: {} layers x {} latent (kv_lora_rank + qk_rope_head_dim, K and V share it: no factor 2) x {} = {} B/token",
                                g.layers, g.spec.latent_dim, elem, group_digits(g.bytes_per_token)));
                break;
            case LayerKind::State:
                out.push_back(
                    fmt::format("state: {} layers x ({} conv elements x {} + {} recurrent elements x {}) = {} B per sequence, "
                                "whatever the context",
                                g.layers, group_digits(g.spec.conv_state_elements), element_size(kv.conv_state_dtype),
                                group_digits(g.spec.ssm_state_elements), element_size(kv.ssm_state_dtype), group_digits(g.state_bytes_per_sequence)));
                break;
            case LayerKind::Cross:
                out.push_back(
                    fmt::format("cross: {} layers attend to the image encoder's tokens: 0 B per context token "
                                "(their cache grows with the images, not the context)",
                                g.layers));
                break;
            case LayerKind::None: out.push_back(fmt::format("none: {} layers mix no tokens (MLP/MoE only): 0 B", g.layers)); break;
        }
    }
    return out;
}

std::string render_size_table(const SizeResult& r, Width width) {
    std::string out = fit_line("kvplan size: " + r.model_label, width);
    out += fit_line(settings_line(r.kv), width) + "\n";
    out += headline_table(r).render_text(width);
    out += "\n";
    out += fields_table(layer_group_fields(), r.kv.groups, 1).render_text(width);
    out += "\nFormula (B = bytes; KiB/MiB/GiB are 2^10/2^20/2^30 bytes):\n";
    // A continued formula line is indented past its group's name.
    for (const std::string& line : formula_lines(r.kv)) out += fit_line(line, width, "  ", "      ");
    out += fmt::format("\nParameters: {} ({})", group_digits(r.weights.params), short_count(r.weights.params));
    if (r.weights.active_params != r.weights.params)
        out += fmt::format(", active per token {} ({})", group_digits(r.weights.active_params), short_count(r.weights.active_params));
    out += "\n";
    if (!r.weights.parts.empty()) out += params_table(r.weights).render_text(width);
    if (auto notes = all_notes(r); !notes.empty()) {
        out += "\nNotes:\n";
        for (const std::string& n : notes) out += fit_line(n, width, "  - ", "    ");
    }
    return out;
}

std::string render_size_markdown(const SizeResult& r) {
    std::string out = fmt::format("### kvplan size: {}\n\n{}\n\n", printable(r.model_label), settings_line(r.kv));
    out += headline_table(r).render_markdown();
    out += "\n";
    out += fields_table(layer_group_fields(), r.kv.groups, 1).render_markdown();
    out += "\n";
    for (const std::string& line : formula_lines(r.kv)) out += "- " + line + "\n";
    if (!r.weights.parts.empty()) out += "\n" + params_table(r.weights).render_markdown();
    if (auto notes = all_notes(r); !notes.empty()) {
        out += "\n";
        for (const std::string& n : notes) out += "> " + printable(n) + "\n";
    }
    return out;
}

std::string render_size_csv(const SizeResult& r) {
    const KvSizing& kv = r.kv;
    Table t({"model", "kv_dtype", "context_tokens", "batch", "tp", "group", "kind", "layers", "window_tokens", "bytes_per_token", "tokens_held",
             "state_bytes_per_sequence", "bytes_per_sequence", "bytes_per_sequence_per_gpu"});
    const std::string context = kv.context_tokens ? std::to_string(*kv.context_tokens) : "";
    auto row = [&](const std::string& group, const std::string& kind, std::int64_t layers, const std::string& window, std::int64_t per_token,
                   const std::string& held, std::int64_t state, std::int64_t seq, std::int64_t seq_gpu) {
        t.add({r.model->name, std::string(dtype_name(kv.kv_dtype)), context, std::to_string(kv.batch), std::to_string(kv.tp), group, kind,
               std::to_string(layers), window, std::to_string(per_token), held, std::to_string(state), std::to_string(seq), std::to_string(seq_gpu)});
    };
    std::int64_t layers = 0, state = 0;
    for (std::size_t i = 0; i < kv.groups.size(); ++i) {
        const LayerGroup& g = kv.groups[i];
        row(std::to_string(i), layer_kind_name(g.spec.kind), g.layers, g.spec.window_tokens > 0 ? std::to_string(g.spec.window_tokens) : "",
            g.bytes_per_token, std::to_string(g.tokens_held), g.state_bytes_per_sequence, g.bytes_per_sequence, g.bytes_per_sequence_per_gpu);
        layers += g.layers;
        state += g.state_bytes_per_sequence;
    }
    row("total", "", layers, "", kv.bytes_per_token, "", state, kv.bytes_per_sequence, kv.bytes_per_sequence_per_gpu);
    return t.render_csv();
}

std::string render_size_json(const SizeResult& r) {
    const KvSizing& kv = r.kv;
    nlohmann::ordered_json j;
    j["model"] = r.model->name;
    j["kv_dtype"] = std::string(dtype_name(kv.kv_dtype));
    j["kv_bytes_per_token"] = kv.bytes_per_token;
    j["context_tokens"] = or_null(kv.context_tokens);
    j["kv_bytes_per_sequence"] = kv.bytes_per_sequence;
    j["batch"] = kv.batch;
    j["kv_bytes_total"] = kv.bytes_total;
    j["tp"] = kv.tp;
    j["kv_bytes_per_gpu"] = kv.bytes_per_gpu;
    j["layer_groups"] = nlohmann::ordered_json::array();
    for (const LayerGroup& g : kv.groups) j["layer_groups"].push_back(fields_json(layer_group_fields(), g));
    j["params"] = r.weights.params;
    j["weights_bytes"] = r.weights.bytes;
    j["weights_from"] = r.weights.from_files ? "files" : "formula";
    j["formula_params"] = r.weights.formula_params;
    j["formula_weights_bytes"] = r.weights.formula_bytes;
    j["stored_weights"] = nullptr;
    if (const auto& s = r.model->stored_weights) {
        nlohmann::ordered_json o;
        o["source"] = s->source;
        o["files"] = s->files;
        o["tensors"] = s->tensors;
        o["elements"] = s->params;
        o["bytes"] = s->bytes;
        o["skipped_bytes"] = s->skipped_bytes;
        o["embedding_bytes"] = s->embedding_bytes;
        o["head_bytes"] = s->head_bytes;
        o["expert_bytes"] = s->expert_bytes;
        o["by_dtype"] = nlohmann::ordered_json::array();
        for (const StoredDtype& d : s->by_dtype) o["by_dtype"].push_back({{"dtype", d.dtype}, {"elements", d.params}, {"bytes", d.bytes}});
        j["stored_weights"] = o;
    }
    // What the table prints under "Notes": the model's decisions, then the request's warnings.
    j["notes"] = r.model->notes;
    j["warnings"] = r.warnings;
    return json_text(j);
}

}  // namespace kvplan
