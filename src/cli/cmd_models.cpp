#include "cli/cmd_models.hpp"

#include <map>

#include <nlohmann/json.hpp>

#include "cli/flag_checks.hpp"
#include "core/memory/kv_size.hpp"
#include "core/model/config_parser.hpp"
#include "core/model/weights.hpp"
#include "core/units.hpp"
#include "io/model_loader.hpp"
#include "io/presets.hpp"
#include "report/json_value.hpp"
#include "report/table.hpp"

namespace kvplan {

CLI::App* setup_models(CLI::App& app, ModelsOptions& o) {
    CLI::App* cmd = app.add_subcommand("models", "list the bundled model presets with their shapes");
    cmd->add_flag("--json", o.json, "print JSON");
    add_wide_flag(*cmd, o.wide);
    cmd->footer("Example:\n  kvplan models\n  kvplan models --wide   # with Hugging Face ids and model types\n  kvplan size --model gemma-2-9b");
    return cmd;
}

namespace {

// "21 sliding(4096) + 21 full" from the layer list.
std::string attention_summary(const ModelSpec& m) {
    std::vector<std::pair<std::string, int>> counts;
    for (const LayerSpec& l : m.layers) {
        std::string k = layer_kind_name(l.kind);
        if (l.window_tokens > 0) k += "(" + std::to_string(l.window_tokens) + ")";
        auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& p) { return p.first == k; });
        if (it == counts.end()) counts.emplace_back(k, 1);
        else ++it->second;
    }
    std::string out;
    for (const auto& [k, n] : counts) out += (out.empty() ? "" : " + ") + std::to_string(n) + " " + k;
    return out;
}

// Fitted to 100 columns, the Hugging Face id and model_type (the two widest
// text columns) are left to --wide and --json.
Table models_table(Width width) {
    if (width == Width::Wide)
        return Table({"preset", "hf id", "type", "layers", "hidden", "heads/kv", "head_dim", "attention", "params", "KV B/token"}, 3);
    return Table({"preset", "layers", "hidden", "heads/kv", "head\ndim", "attention", "params", "KV B/\ntoken"}, 1);
}

}  // namespace

std::string run_models(const ModelsOptions& o) {
    const Width width = o.wide ? Width::Wide : Width::Fit;
    Table t = models_table(width);
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const Preset& p : presets()) {
        ModelSpec m = parse_model_config(parse_json_text(std::string(p.config_text), p.name), p.name);
        KvOptions kv;
        kv.context = 1;  // bytes per token do not depend on the context
        KvSizing s = size_kv(m, kv);
        WeightSizing w = size_weights(m);
        std::int64_t kv_heads = 0;
        for (const LayerSpec& l : m.layers) kv_heads = std::max(kv_heads, l.kind == LayerKind::Mla ? 0 : l.kv_heads);
        std::string heads = m.heads ? std::to_string(m.heads) + "/" + (kv_heads ? std::to_string(kv_heads) : "mla") : "-";
        std::vector<std::string> row{p.name,
                                     p.hf_id,
                                     m.model_type,
                                     std::to_string(m.layers.size()),
                                     std::to_string(m.hidden),
                                     heads,
                                     m.head_dim ? std::to_string(m.head_dim) : "-",
                                     attention_summary(m),
                                     short_count(w.params),
                                     group_digits(s.bytes_per_token)};
        if (width == Width::Fit) row.erase(row.begin() + 1, row.begin() + 3);
        t.add(row);
        nlohmann::ordered_json e;
        e["name"] = p.name;
        e["hf_id"] = p.hf_id;
        e["model_type"] = m.model_type;
        e["layers"] = m.layers.size();
        e["hidden"] = m.hidden;
        e["heads"] = m.heads;
        e["head_dim"] = m.head_dim;
        e["attention"] = attention_summary(m);
        e["params"] = w.params;
        e["weights_bytes"] = w.bytes;
        e["kv_bytes_per_token"] = s.bytes_per_token;
        e["max_position_tokens"] = m.max_position_tokens;
        e["source"] = p.source;
        j.push_back(e);
    }
    if (o.json) return json_text(j);
    std::string legend = "KV B/token at the serving dtype (bf16 stays bf16, fp32/fp16 -> fp16). Sources: models/presets/index.json.";
    if (width == Width::Fit) legend += " Hugging Face ids and model types: kvplan models --wide.";
    return t.render_text(width) + "\n" + wrap_text(legend, kFitColumns);
}

}  // namespace kvplan
