#include "core/hardware.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/bounds.hpp"
#include "core/config_reader.hpp"
#include "core/error.hpp"

namespace kvplan {

namespace {

// "NVIDIA H100_SXM" -> "nvidia-h100-sxm": ids compare after this.
std::string normalise_id(const std::string& text) {
    std::string out;
    for (char c : text) {
        unsigned char u = static_cast<unsigned char>(c);
        if (c == ' ' || c == '_' || c == '-') {
            if (!out.empty() && out.back() != '-') out += '-';
        } else {
            out += static_cast<char>(std::tolower(u));
        }
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}

// Edit distance, for "did you mean" suggestions.
std::size_t distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

std::optional<double> tflops(const ConfigReader& r, const char* key) {
    std::optional<double> v = r.get_number(key);
    if (v && !within_bounds(Quantity::PeakTflops, *v)) r.fail(key, bounds_refusal(Quantity::PeakTflops, *v) + " (or null)");
    return v;
}

// An integer figure (bytes, bytes/s) read in [1, 2^50] then held to its row of
// the bounds table; `zero_means_none` lets 0 stand for "no such link".
std::int64_t bounded_int(const ConfigReader& r, const char* key, Quantity q, bool required, bool zero_means_none = false) {
    constexpr std::int64_t kMax = std::int64_t{1} << 50;
    const std::optional<std::int64_t> v = required ? r.require_int({key}, 1, kMax) : r.get_int({key}, 0, kMax);
    if (!v || (zero_means_none && *v == 0)) return 0;
    if (!within_bounds(q, static_cast<double>(*v))) r.fail(key, bounds_refusal(q, static_cast<double>(*v)));
    return *v;
}

std::string text_or_empty(const ConfigReader& r, const char* key) {
    return r.get_string(key).value_or("");
}

// Every key a device entry may have (schema: `kvplan gpus --schema`).
const std::vector<std::string> kDeviceKeys = {"id",
                                              "name",
                                              "vendor",
                                              "aliases",
                                              "memory_bytes",
                                              "memory_source",
                                              "cuda_total_bytes",
                                              "cuda_total_source",
                                              "marketed_memory",
                                              "memory_technology",
                                              "memory_bandwidth_bytes_per_s",
                                              "bandwidth_source",
                                              "peak_tflops",
                                              "tflops_source",
                                              "interconnect",
                                              "interconnect_bytes_per_s_per_direction",
                                              "interconnect_source",
                                              "host_link",
                                              "host_link_bytes_per_s_per_direction",
                                              "host_link_source",
                                              "unified_memory",
                                              "unverified"};

void refuse_unknown_keys(const ConfigReader& r, const nlohmann::json& object, const std::vector<std::string>& known) {
    for (const auto& [key, value] : object.items()) {
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        r.fail(key, "unknown key (expected one of: " + list + ")");
    }
}

}  // namespace

std::vector<Gpu> parse_gpu_database(const nlohmann::json& db, const std::string& source) {
    ConfigReader top(db, source);
    // A typo in a hand-written device file would otherwise be ignored silently.
    refuse_unknown_keys(top, db, {"schema_version", "gpus", "source_note"});
    std::int64_t version = top.require_int({"schema_version"}, 1, 1000);
    if (version != 1) top.fail("schema_version", "expected 1, found " + std::to_string(version));
    const nlohmann::json* list = top.find({"gpus"});
    if (!list || !list->is_array() || list->empty()) top.fail("gpus", "expected a non-empty array of devices");

    std::vector<Gpu> out;
    std::set<std::string> names;  // ids and aliases, normalised, must be unique
    for (std::size_t i = 0; i < list->size(); ++i) {
        const nlohmann::json& entry = (*list)[i];
        const std::string prefix = "gpus[" + std::to_string(i) + "].";
        if (!entry.is_object()) top.fail("gpus[" + std::to_string(i) + "]", "expected an object");
        ConfigReader r(entry, source, prefix);
        refuse_unknown_keys(r, entry, kDeviceKeys);
        Gpu g;
        g.id = r.get_string("id").value_or("");
        if (g.id.empty() || normalise_id(g.id) != g.id) r.fail("id", "expected a lower-case hyphenated id such as \"h100-sxm\"");
        g.name = r.get_string("name").value_or(g.id);
        g.vendor = text_or_empty(r, "vendor");
        g.aliases = r.get_string_list("aliases").value_or(std::vector<std::string>{});
        if (names.count(g.id)) r.fail("id", "\"" + g.id + "\" is already the id or alias of another device");
        names.insert(g.id);
        for (const std::string& a : g.aliases) {
            std::string n = normalise_id(a);
            if (names.count(n)) r.fail("aliases", "\"" + a + "\" is already the id or alias of another device");
            names.insert(n);
        }
        constexpr std::int64_t kMax = std::int64_t{1} << 50;
        g.memory_bytes = bounded_int(r, "memory_bytes", Quantity::DeviceMemory, true);
        g.memory_source = text_or_empty(r, "memory_source");
        g.cuda_total_bytes = r.get_int({"cuda_total_bytes"}, 1, kMax);
        if (g.cuda_total_bytes && *g.cuda_total_bytes > g.memory_bytes)
            r.fail_relation("cuda_total_bytes", "must not exceed memory_bytes (CUDA sees at most what the driver has)");
        g.cuda_total_source = text_or_empty(r, "cuda_total_source");
        g.marketed_memory = text_or_empty(r, "marketed_memory");
        g.memory_technology = text_or_empty(r, "memory_technology");
        g.bandwidth_bytes_per_s = bounded_int(r, "memory_bandwidth_bytes_per_s", Quantity::MemoryBandwidth, true);
        g.bandwidth_source = text_or_empty(r, "bandwidth_source");
        if (auto peak = r.child("peak_tflops")) {
            refuse_unknown_keys(*peak, entry.at("peak_tflops"), {"fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"});
            g.peak.fp32 = tflops(*peak, "fp32");
            g.peak.tf32 = tflops(*peak, "tf32");
            g.peak.bf16 = tflops(*peak, "bf16");
            g.peak.fp16 = tflops(*peak, "fp16");
            g.peak.fp8 = tflops(*peak, "fp8");
            g.peak.int8 = tflops(*peak, "int8");
            g.peak.fp4 = tflops(*peak, "fp4");
        }
        g.tflops_source = text_or_empty(r, "tflops_source");
        g.interconnect = text_or_empty(r, "interconnect");
        g.interconnect_bytes_per_s = bounded_int(r, "interconnect_bytes_per_s_per_direction", Quantity::LinkBandwidth, false, true);
        g.interconnect_source = text_or_empty(r, "interconnect_source");
        // Optional: a device file without it leaves the host link unknown (0).
        g.host_link = text_or_empty(r, "host_link");
        g.host_link_bytes_per_s = bounded_int(r, "host_link_bytes_per_s_per_direction", Quantity::LinkBandwidth, false, true);
        g.host_link_source = text_or_empty(r, "host_link_source");
        g.unified_memory = r.get_bool("unified_memory").value_or(false);
        g.unverified = r.get_string_list("unverified").value_or(std::vector<std::string>{});
        out.push_back(std::move(g));
    }
    return out;
}

namespace {

// The device `wanted` (a normalised id) names, by id, name or alias.
const Gpu* named(const std::vector<Gpu>& gpus, const std::string& wanted) {
    for (const Gpu& g : gpus) {
        if (g.id == wanted || normalise_id(g.name) == wanted) return &g;
        for (const std::string& a : g.aliases)
            if (normalise_id(a) == wanted) return &g;
    }
    return nullptr;
}

}  // namespace

const Gpu& find_gpu(const std::vector<Gpu>& gpus, const std::string& id, const std::string& flag) {
    const std::string wanted = normalise_id(id);
    if (const Gpu* g = named(gpus, wanted)) return *g;
    // The name nvidia-smi (or rocm-smi) prints, "NVIDIA H100 80GB HBM3",
    // "NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB": the rest after the
    // vendor word is an id or alias.
    for (const char* vendor : {"nvidia-", "amd-", "intel-"})
        if (wanted.rfind(vendor, 0) == 0)
            if (const Gpu* g = named(gpus, wanted.substr(std::string(vendor).size()))) return *g;
    // Suggest the closest ids (and every id that contains what was typed).
    std::vector<std::pair<std::size_t, std::string>> ranked;
    for (const Gpu& g : gpus) {
        std::size_t d = distance(wanted, g.id);
        if (!wanted.empty() && g.id.find(wanted) != std::string::npos) d = 0;
        ranked.emplace_back(d, g.id);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string hint;
    for (std::size_t i = 0; i < ranked.size() && i < 4; ++i) hint += (i ? ", " : "") + ranked[i].second;
    usage_error(flag + ": unknown device \"" + id + "\" (closest: " + hint +
                "; `kvplan gpus` lists them all, or describe the device with --gpu-mem SIZE)");
}

Gpu gpu_from_memory(std::int64_t memory_bytes, const std::string& label) {
    Gpu g;
    g.id = "custom";
    g.name = label;
    g.memory_bytes = memory_bytes;
    g.memory_source = "--gpu-mem";
    g.from_database = false;
    return g;
}

std::optional<double> peak_tflops_for(const Gpu& gpu, Dtype dtype) {
    switch (dtype) {
        case Dtype::Fp32: return gpu.peak.fp32;
        case Dtype::Fp16: return gpu.peak.fp16 ? gpu.peak.fp16 : gpu.peak.bf16;
        case Dtype::Bf16: return gpu.peak.bf16;
        case Dtype::Fp8: return gpu.peak.fp8;
        case Dtype::Int8: return gpu.peak.int8;
        case Dtype::Int4: return std::nullopt;
        case Dtype::Fp4: return gpu.peak.fp4;
    }
    return std::nullopt;
}

LinkFamily link_family(const Gpu& gpu) {
    const std::string& t = gpu.interconnect;
    auto has = [&](const char* part) { return t.find(part) != std::string::npos; };
    if (t.empty() || t.rfind("none", 0) == 0) return gpu.interconnect_bytes_per_s > 0 ? LinkFamily::Pcie : LinkFamily::None;
    if (t.rfind("NVLink ", 0) == 0 && t.size() > 7 && std::isdigit(static_cast<unsigned char>(t[7]))) return LinkFamily::Nvlink;
    if (has("Infinity Fabric") || has("XGMI")) return LinkFamily::Xgmi;
    if (has("RoCE")) return LinkFamily::Roce;
    if (t.rfind("ICI", 0) == 0) return LinkFamily::Ici;
    return LinkFamily::Pcie;
}

const char* link_family_name(LinkFamily link) {
    switch (link) {
        case LinkFamily::None: return "none";
        case LinkFamily::Nvlink: return "nvlink";
        case LinkFamily::Pcie: return "pcie";
        case LinkFamily::Xgmi: return "xgmi";
        case LinkFamily::Roce: return "roce";
        case LinkFamily::Ici: return "ici";
    }
    return "none";
}

std::optional<LinkFamily> parse_link_family(const std::string& text) {
    for (LinkFamily l : {LinkFamily::None, LinkFamily::Nvlink, LinkFamily::Pcie, LinkFamily::Xgmi, LinkFamily::Roce, LinkFamily::Ici})
        if (text == link_family_name(l)) return l;
    return std::nullopt;
}

}  // namespace kvplan
