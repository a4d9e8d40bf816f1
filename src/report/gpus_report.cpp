#include "report/gpus_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "report/json_value.hpp"
#include "report/table.hpp"

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

// Every column, each cell with its unit: --wide and Markdown. The host link
// (what KV-cache offload to CPU memory moves blocks over) is left out of the
// 100-column table, which it would overflow.
Table wide_table(const std::vector<Gpu>& gpus) {
    Table t({"id", "name", "memory (driver)", "CUDA total", "bandwidth", "bf16 TFLOP/s", "fp8 TFLOP/s", "fp4 TFLOP/s", "link per direction",
             "host link per direction"},
            2);
    for (const Gpu& g : gpus)
        t.add({g.id, g.name, binary_size(g.memory_bytes), g.cuda_total_bytes ? binary_size(*g.cuda_total_bytes) : "-",
               gb_s(g.bandwidth_bytes_per_s) + " GB/s", tflops(g.peak.bf16 ? g.peak.bf16 : g.peak.fp16), tflops(g.peak.fp8), tflops(g.peak.fp4),
               g.interconnect_bytes_per_s > 0 ? gb_s(g.interconnect_bytes_per_s) + " GB/s" : "-", host_link_cell(g)});
    return t;
}

// The same figures in 100 columns: units once in the header, the long
// marketing name left to --wide (the id is what --gpu takes).
Table fit_table(const std::vector<Gpu>& gpus) {
    Table t({"id", "memory\n(GiB)", "CUDA total\n(GiB)", "bandwidth\n(GB/s)", "bf16\nTFLOP/s", "fp8\nTFLOP/s", "fp4\nTFLOP/s",
             "link (GB/s)\nper direction"},
            1);
    for (const Gpu& g : gpus)
        t.add({g.id, gib(g.memory_bytes), g.cuda_total_bytes ? gib(*g.cuda_total_bytes) : "-", gb_s(g.bandwidth_bytes_per_s),
               tflops(g.peak.bf16 ? g.peak.bf16 : g.peak.fp16), tflops(g.peak.fp8), tflops(g.peak.fp4),
               g.interconnect_bytes_per_s > 0 ? gb_s(g.interconnect_bytes_per_s) : "-"});
    return t;
}

}  // namespace

std::string render_gpus_table(const std::vector<Gpu>& gpus, Width width) {
    const std::string legend =
        "Dense (not sparse) peak TFLOP/s (bf16 column: fp16 where the device has no bf16). Memory in GiB (2^30 B) as the driver "
        "reports it; CUDA total is what engines see. Sources per figure: models/gpus.json, models/GPUS_SOURCES.md.";
    const std::string host =
        " Host link: to host CPU memory, what KV-cache offload to the CPU moves blocks over (theoretical, per direction; unified: the "
        "device shares the CPU's memory).";
    if (width == Width::Wide) return wide_table(gpus).render_text(Width::Wide) + "\n" + wrap_text(legend + host, kFitColumns);
    return fit_table(gpus).render_text() + "\n" + wrap_text(legend + " Names and host links: kvplan gpus --wide.", kFitColumns);
}

std::string render_gpus_markdown(const std::vector<Gpu>& gpus) {
    return wide_table(gpus).render_markdown();
}

std::string render_gpus_json(const std::vector<Gpu>& gpus) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Gpu& g : gpus) {
        nlohmann::ordered_json j;
        j["id"] = g.id;
        j["name"] = g.name;
        j["aliases"] = g.aliases;
        j["memory_bytes"] = g.memory_bytes;
        j["cuda_total_bytes"] = or_null(g.cuda_total_bytes);
        j["memory_bandwidth_bytes_per_s"] = g.bandwidth_bytes_per_s;
        j["peak_tflops"] = {{"fp32", or_null(g.peak.fp32)}, {"tf32", or_null(g.peak.tf32)}, {"bf16", or_null(g.peak.bf16)},
                            {"fp16", or_null(g.peak.fp16)}, {"fp8", or_null(g.peak.fp8)},   {"int8", or_null(g.peak.int8)},
                            {"fp4", or_null(g.peak.fp4)}};
        j["interconnect"] = g.interconnect;
        j["interconnect_bytes_per_s_per_direction"] = g.interconnect_bytes_per_s;
        j["host_link"] = g.host_link;
        j["host_link_bytes_per_s_per_direction"] = g.host_link_bytes_per_s;
        j["unified_memory"] = g.unified_memory;
        j["unverified"] = g.unverified;
        out.push_back(j);
    }
    return out.dump(2) + "\n";
}

}  // namespace kvplan
