#include "report/engines_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/table.hpp"

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

std::string render_engines_table(const std::vector<EngineProfile>& engines, bool markdown) {
    Table t({"engine", "weights\nHBM", "weights\nGDDR", "weights\nLPDDR", "KV", "step\n(ms)", "layer\n(us)", "16-bit/\nfp8 FLOP/s",
             "GEMM half\n(tokens)", "all-\nreduce"},
            1);
    for (const EngineProfile& p : engines)
        t.add({p.id, num(p.weights_hbm), num(p.weights_gddr), num(p.weights_lpddr), num(p.kv_fraction), ms(p.step_overhead_s), us(p.layer_overhead_s),
               num(p.flops_16bit) + "/" + num(p.flops_fp8), num(p.prefill_half_tokens), allreduce_text(p)});
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

std::string render_engines_json(const std::vector<EngineProfile>& engines, const std::vector<LinkLatency>& links) {
    nlohmann::ordered_json out;
    out["engines"] = nlohmann::ordered_json::array();
    for (const EngineProfile& p : engines) {
        nlohmann::ordered_json j;
        j["id"] = p.id;
        j["name"] = p.name;
        j["description"] = p.description;
        j["weights_fraction"] = {{"hbm", p.weights_hbm}, {"gddr", p.weights_gddr}, {"lpddr", p.weights_lpddr}, {"other", p.weights_other}};
        j["kv_fraction"] = p.kv_fraction;
        j["step_overhead_s"] = p.step_overhead_s;
        j["layer_overhead_s"] = p.layer_overhead_s;
        j["kernel_factor"] = p.kernel_factor;
        j["flops_fraction"] = {{"16bit", p.flops_16bit}, {"fp8", p.flops_fp8}};
        j["prefill_half_tokens"] = p.prefill_half_tokens;
        j["moe_efficiency"] = p.moe_efficiency;
        j["tp_flops_loss"] = p.tp_flops_loss;
        j["link_fraction"] = p.link_fraction;
        j["allreduce"] = {{"implementation", allreduce_name(p.allreduce)}, {"latency_s", p.fixed_allreduce_latency_s}};
        j["int4_group_bits"] = p.int4_group_bits;
        j["quantize_head"] = p.quantize_head;
        j["kv_cache_dtype"] = p.kv_cache_dtype ? nlohmann::ordered_json(std::string(dtype_name(*p.kv_cache_dtype))) : nlohmann::ordered_json();
        j["fitted_on"] = p.fitted_on;
        out["engines"].push_back(j);
    }
    out["allreduce_latency"] = nlohmann::ordered_json::array();
    for (const LinkLatency& l : links)
        out["allreduce_latency"].push_back({{"implementation", allreduce_name(l.implementation)},
                                            {"link", link_family_name(l.link)},
                                            {"gpus", l.gpus},
                                            {"latency_s", l.latency_s},
                                            {"source", l.source}});
    return out.dump(2) + "\n";
}

}  // namespace kvplan
