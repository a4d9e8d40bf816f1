#include "report/gpus_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "report/json_value.hpp"

namespace kvplan {

namespace {

std::string tflops(const std::optional<double>& v) {
    return v ? fmt::format("{:g}", *v) : "-";
}
std::string gib(std::int64_t bytes) {
    return fmt::format("{:.2f}", static_cast<double>(bytes) / 1073741824.0);
}
std::string gb_s(std::int64_t bytes_per_s) {
    return fmt::format("{:g}", static_cast<double>(bytes_per_s) / 1e9);
}

// The host-link cell: GB/s per direction; "unified" where the device shares
// the CPU's memory (Apple silicon: no separate link); "-" when unknown.
std::string host_link_cell(const Gpu& g) {
    if (g.host_link_bytes_per_s > 0) return gb_s(g.host_link_bytes_per_s) + " GB/s";
    return g.unified_memory ? "unified" : "-";
}

nlohmann::ordered_json peak_json(const PeakTflops& p) {
    return {{"fp32", or_null(p.fp32)}, {"tf32", or_null(p.tf32)}, {"bf16", or_null(p.bf16)}, {"fp16", or_null(p.fp16)},
            {"fp8", or_null(p.fp8)},   {"int8", or_null(p.int8)}, {"fp4", or_null(p.fp4)}};
}

}  // namespace

// Every column, each cell with its unit: --wide and Markdown; the 100-column
// table states each unit once, in its heading, and leaves out the marketing
// name (the id is what --gpu takes) and the host link (what KV-cache offload
// to CPU memory moves blocks over), which would overflow it.
const Fields<Gpu>& gpu_fields() {
    using J = nlohmann::ordered_json;
    auto peak16 = [](const Gpu& g) { return tflops(g.peak.bf16 ? g.peak.bf16 : g.peak.fp16); };
    auto link = [](const Gpu& g) { return g.interconnect_bytes_per_s > 0 ? gb_s(g.interconnect_bytes_per_s) : std::string("-"); };
    static const Fields<Gpu> fields = {
        {.key = "id", .json = [](const Gpu& g) { return J(g.id); }, .header = "id", .cell = [](const Gpu& g) { return g.id; }},
        {.key = "name",
         .json = [](const Gpu& g) { return J(g.name); },
         .header = "name",
         .cell = [](const Gpu& g) { return g.name; },
         .in_fit = false},
        {.key = "aliases", .json = [](const Gpu& g) { return J(g.aliases); }},
        {.key = "memory_bytes",
         .kind = FieldKind::Number,
         .json = [](const Gpu& g) { return J(g.memory_bytes); },
         .header = "memory (driver)",
         .cell = [](const Gpu& g) { return binary_size(g.memory_bytes); },
         .fit_header = "memory\n(GiB)",
         .fit_cell = [](const Gpu& g) { return gib(g.memory_bytes); }},
        {.key = "cuda_total_bytes",
         .kind = FieldKind::Number,
         .json = [](const Gpu& g) { return or_null(g.cuda_total_bytes); },
         .header = "CUDA total",
         .cell = [](const Gpu& g) { return g.cuda_total_bytes ? binary_size(*g.cuda_total_bytes) : "-"; },
         .fit_header = "CUDA total\n(GiB)",
         .fit_cell = [](const Gpu& g) { return g.cuda_total_bytes ? gib(*g.cuda_total_bytes) : "-"; }},
        {.key = "memory_bandwidth_bytes_per_s",
         .kind = FieldKind::Number,
         .json = [](const Gpu& g) { return J(g.bandwidth_bytes_per_s); },
         .header = "bandwidth",
         .cell = [](const Gpu& g) { return gb_s(g.bandwidth_bytes_per_s) + " GB/s"; },
         .fit_header = "bandwidth\n(GB/s)",
         .fit_cell = [](const Gpu& g) { return gb_s(g.bandwidth_bytes_per_s); }},
        {.key = "peak_tflops", .kind = FieldKind::Numbers, .json = [](const Gpu& g) { return peak_json(g.peak); }},
        {.header = "bf16 TFLOP/s", .cell = peak16, .fit_header = "bf16\nTFLOP/s"},
        {.header = "fp8 TFLOP/s", .cell = [](const Gpu& g) { return tflops(g.peak.fp8); }, .fit_header = "fp8\nTFLOP/s"},
        {.header = "fp4 TFLOP/s", .cell = [](const Gpu& g) { return tflops(g.peak.fp4); }, .fit_header = "fp4\nTFLOP/s"},
        {.key = "interconnect", .json = [](const Gpu& g) { return J(g.interconnect); }},
        {.key = "interconnect_bytes_per_s_per_direction",
         .kind = FieldKind::Number,
         .json = [](const Gpu& g) { return J(g.interconnect_bytes_per_s); },
         .header = "link per direction",
         .cell = [=](const Gpu& g) { return g.interconnect_bytes_per_s > 0 ? link(g) + " GB/s" : "-"; },
         .fit_header = "link (GB/s)\nper direction",
         .fit_cell = link},
        {.key = "host_link", .json = [](const Gpu& g) { return J(g.host_link); }},
        {.key = "host_link_bytes_per_s_per_direction",
         .kind = FieldKind::Number,
         .json = [](const Gpu& g) { return J(g.host_link_bytes_per_s); },
         .header = "host link per direction",
         .cell = host_link_cell,
         .in_fit = false},
        {.key = "unified_memory", .kind = FieldKind::Flag, .json = [](const Gpu& g) { return J(g.unified_memory); }},
        {.key = "unverified", .kind = FieldKind::Flag, .json = [](const Gpu& g) { return J(g.unverified); }},
    };
    return fields;
}

std::string render_gpus_table(const std::vector<Gpu>& gpus, Width width) {
    const std::string legend =
        "Dense (not sparse) peak TFLOP/s (bf16 column: fp16 where the device has no bf16). Memory in GiB (2^30 B) as the driver "
        "reports it; CUDA total is what engines see. Sources per figure: models/gpus.json, models/GPUS_SOURCES.md.";
    const std::string host =
        " Host link: to host CPU memory, what KV-cache offload to the CPU moves blocks over (theoretical, per direction; unified: the "
        "device shares the CPU's memory).";
    const Table t = fields_table(gpu_fields(), gpus, width == Width::Wide ? 2 : 1, width);
    if (width == Width::Wide) return t.render_text(Width::Wide) + "\n" + wrap_text(legend + host, kFitColumns);
    return t.render_text() + "\n" + wrap_text(legend + " Names and host links: kvplan gpus --wide.", kFitColumns);
}

std::string render_gpus_markdown(const std::vector<Gpu>& gpus) {
    return fields_table(gpu_fields(), gpus, 2).render_markdown();
}

std::string render_gpus_json(const std::vector<Gpu>& gpus) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Gpu& g : gpus) out.push_back(fields_json(gpu_fields(), g));
    return json_text(out);
}

}  // namespace kvplan
