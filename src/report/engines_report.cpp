#include "report/engines_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/json_value.hpp"

namespace kvplan {

namespace {

std::string num(double v) {
    return fmt::format("{:.3g}", v);
}
std::string ms(double s) {
    return fmt::format("{:.3g}", s * 1e3);
}
std::string us(double s) {
    return fmt::format("{:.3g}", s * 1e6);
}

std::string allreduce_text(const EngineProfile& p) {
    if (p.allreduce == AllreduceImpl::Fixed) return us(p.fixed_allreduce_latency_s) + " us";
    return allreduce_name(p.allreduce);
}

}  // namespace

// A profile's figures: the table shows the ones a comparison needs, with
// seconds as ms and us; the JSON holds them all, in seconds.
const Fields<EngineProfile>& engine_fields() {
    using J = nlohmann::ordered_json;
    using P = EngineProfile;
    static const Fields<P> fields = {
        {.key = "id", .json = [](const P& p) { return J(p.id); }, .header = "engine", .cell = [](const P& p) { return p.id; }},
        {.key = "name", .json = [](const P& p) { return J(p.name); }},
        {.key = "description", .json = [](const P& p) { return J(p.description); }},
        {.key = "weights_fraction",
         .kind = FieldKind::Numbers,
         .json =
             [](const P& p) {
                 return J{{"hbm", p.weights_hbm}, {"gddr", p.weights_gddr}, {"lpddr", p.weights_lpddr}, {"other", p.weights_other}};
             }},
        {.header = "weights\nHBM", .cell = [](const P& p) { return num(p.weights_hbm); }},
        {.header = "weights\nGDDR", .cell = [](const P& p) { return num(p.weights_gddr); }},
        {.header = "weights\nLPDDR", .cell = [](const P& p) { return num(p.weights_lpddr); }},
        {.key = "kv_fraction",
         .kind = FieldKind::Number,
         .json = [](const P& p) { return J(p.kv_fraction); },
         .header = "KV",
         .cell = [](const P& p) { return num(p.kv_fraction); }},
        {.key = "step_overhead_s",
         .kind = FieldKind::Number,
         .json = [](const P& p) { return J(p.step_overhead_s); },
         .header = "step\n(ms)",
         .cell = [](const P& p) { return ms(p.step_overhead_s); }},
        {.key = "layer_overhead_s",
         .kind = FieldKind::Number,
         .json = [](const P& p) { return J(p.layer_overhead_s); },
         .header = "layer\n(us)",
         .cell = [](const P& p) { return us(p.layer_overhead_s); }},
        {.key = "kernel_factor", .kind = FieldKind::Numbers, .json = [](const P& p) { return J(p.kernel_factor); }},
        {.key = "flops_fraction",
         .kind = FieldKind::Numbers,
         .json =
             [](const P& p) {
                 return J{{"16bit", p.flops_16bit}, {"fp8", p.flops_fp8}};
             },
         .header = "16-bit/\nfp8 FLOP/s",
         .cell = [](const P& p) { return num(p.flops_16bit) + "/" + num(p.flops_fp8); }},
        {.key = "prefill_half_tokens",
         .kind = FieldKind::Number,
         .json = [](const P& p) { return J(p.prefill_half_tokens); },
         .header = "GEMM half\n(tokens)",
         .cell = [](const P& p) { return num(p.prefill_half_tokens); }},
        {.key = "moe_efficiency", .kind = FieldKind::Number, .json = [](const P& p) { return J(p.moe_efficiency); }},
        {.key = "tp_flops_loss", .kind = FieldKind::Number, .json = [](const P& p) { return J(p.tp_flops_loss); }},
        {.key = "link_fraction", .kind = FieldKind::Number, .json = [](const P& p) { return J(p.link_fraction); }},
        // An object: the implementation's name, and its latency_s (a key with its unit) where the
        // profile sets one: always for "fixed", otherwise only a value that differs from the default
        // (the fallback when models/interconnects.json has no figure), as models/engines/*.json write it.
        {.key = "allreduce",
         .json =
             [](const P& p) {
                 J a{{"implementation", allreduce_name(p.allreduce)}};
                 if (p.allreduce == AllreduceImpl::Fixed || p.fixed_allreduce_latency_s != EngineProfile{}.fixed_allreduce_latency_s)
                     a["latency_s"] = p.fixed_allreduce_latency_s;
                 return a;
             },
         .header = "all-\nreduce",
         .cell = allreduce_text},
        {.key = "int4_group_bits", .kind = FieldKind::Number, .json = [](const P& p) { return J(p.int4_group_bits); }},
        {.key = "quantize_head", .kind = FieldKind::Flag, .json = [](const P& p) { return J(p.quantize_head); }},
        {.key = "kv_cache_dtype", .json = [](const P& p) { return p.kv_cache_dtype ? J(std::string(dtype_name(*p.kv_cache_dtype))) : J(); }},
        {.key = "fitted_on", .json = [](const P& p) { return J(p.fitted_on); }},
    };
    return fields;
}

std::string render_engines_table(const std::vector<EngineProfile>& engines, bool markdown) {
    const Table t = fields_table(engine_fields(), engines, 1);
    if (markdown) return t.render_markdown();
    return t.render_text() + "\n" +
           wrap_text(
               "Fractions of the datasheet: weight streaming by memory technology, KV reads, dense peak FLOP/s. "
               "GEMM half: the tokens per step at which GEMMs reach half that. Quantized kernels' factors, "
               "int4 layouts and what each value was fitted on: kvplan engines --show ID. All-reduce: custom one-shot or NCCL, "
               "latency from models/interconnects.json by link and GPUs; docs/accuracy.md.",
               kFitColumns);
}

std::string render_engine_detail(const EngineProfile& p, bool markdown) {
    struct Line {
        std::string name, value, fitted;
    };
    std::vector<Line> lines;
    for (const std::string& name : profile_value_names()) {
        if (name.rfind("kernel_factor.", 0) == 0 && !p.kernel_factor.count(name.substr(14))) continue;
        auto it = p.fitted_on.find(name);
        lines.push_back({name, num(profile_value(p, name)), it == p.fitted_on.end() ? "not fitted: no effect in the reference rows" : it->second});
    }
    lines.push_back({"allreduce", allreduce_text(p), "the engine's source (docs/roofline.md, \"All-reduce latency\")"});
    lines.push_back({"int4_group_bits", num(p.int4_group_bits), "the engine's int4 layout: scale and zero bits per group"});
    lines.push_back({"quantize_head", p.quantize_head ? "true" : "false", "whether the engine's int4/int8 quantizer converts the LM head"});
    if (p.kv_cache_dtype)
        lines.push_back(
            {"kv_cache_dtype", std::string(dtype_name(*p.kv_cache_dtype)), "what --kv-dtype auto means under the engine (its own default)"});
    if (markdown) {
        Table t({"value", "setting", "fitted on"}, 3);
        for (const Line& l : lines) t.add({l.name, l.value, l.fitted});
        return t.render_markdown();
    }
    std::string out = wrap_text(p.id + " (" + p.name + "): " + p.description, kFitColumns) + "\n";
    for (const Line& l : lines) out += fmt::format("  {:<23}{:>8}\n", l.name, l.value) + wrap_text(l.fitted, kFitColumns, "      ", "      ");
    return out;
}

namespace {

// A profile as models/engines/*.json hold it and parse_engine_profile reads it
// (core/speed/engine_profile.cpp): schema_version first, and no kv_cache_dtype
// when the engine has no default of its own (the reader takes a dtype name, not null).
nlohmann::ordered_json profile_file_json(const EngineProfile& p) {
    nlohmann::ordered_json j = {{"schema_version", 1}};
    j.update(fields_json(engine_fields(), p));
    if (j["kv_cache_dtype"].is_null()) j.erase("kv_cache_dtype");
    return j;
}

}  // namespace

std::string render_engine_file_json(const EngineProfile& p) {
    return json_text(profile_file_json(p));
}

std::string render_engines_json(const std::vector<EngineProfile>& engines, const std::vector<LinkLatency>& links) {
    nlohmann::ordered_json out;
    out["engines"] = nlohmann::ordered_json::array();
    for (const EngineProfile& p : engines) out["engines"].push_back(profile_file_json(p));
    out["allreduce_latency"] = nlohmann::ordered_json::array();
    for (const LinkLatency& l : links)
        out["allreduce_latency"].push_back({{"implementation", allreduce_name(l.implementation)},
                                            {"link", link_family_name(l.link)},
                                            {"gpus", l.gpus},
                                            {"latency_s", l.latency_s},
                                            {"source", l.source}});
    return json_text(out);
}

}  // namespace kvplan
