#include "core/speed/engine_profile.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/bounds.hpp"
#include "core/config_reader.hpp"
#include "core/error.hpp"

namespace kvplan {

const char* allreduce_name(AllreduceImpl impl) {
    switch (impl) {
        case AllreduceImpl::Fixed: return "fixed";
        case AllreduceImpl::Nccl: return "nccl";
        case AllreduceImpl::CustomOneShot: return "custom";
    }
    return "fixed";
}

namespace {

std::optional<AllreduceImpl> parse_allreduce(const std::string& text) {
    for (AllreduceImpl i : {AllreduceImpl::Fixed, AllreduceImpl::Nccl, AllreduceImpl::CustomOneShot})
        if (text == allreduce_name(i)) return i;
    return std::nullopt;
}

const char* const kFamilies[] = {"gguf", "int4", "int8", "fp8", "nvfp4", "mxfp4", "exl2", "mlc"};

void refuse_unknown(const ConfigReader& r, const nlohmann::json& object, const std::vector<std::string>& known) {
    for (const auto& [key, value] : object.items())
        if (std::find(known.begin(), known.end(), key) == known.end()) r.fail(key, "unknown field");
}

// A value in an error message: up to six significant digits, no trailing zeros.
std::string shown(double v) {
    std::ostringstream out;
    out << std::setprecision(6) << v;
    return out.str();
}

// A number in [lo, hi] (or (lo, hi] when lo_open), finite.
double read_number(const ConfigReader& r, const char* key, double lo, double hi, double fallback, bool lo_open) {
    const std::optional<double> v = r.get_number(key);
    if (!v) return fallback;
    const bool ok = std::isfinite(*v) && (lo_open ? *v > lo : *v >= lo) && *v <= hi;
    if (!ok) r.fail(key, "expected a number in " + std::string(lo_open ? "(" : "[") + shown(lo) + ", " + shown(hi) + "], found " + shown(*v));
    return *v;
}

// A figure held to its row of the bounds table (core/bounds.hpp).
double read_bounded(const ConfigReader& r, const char* key, Quantity q, double fallback) {
    const std::optional<double> v = r.get_number(key);
    if (!v) return fallback;
    if (!within_bounds(q, *v)) r.fail(key, bounds_refusal(q, *v));
    return *v;
}

}  // namespace

std::vector<LinkLatency> parse_link_latencies(const nlohmann::json& value, const std::string& source) {
    if (!value.is_object())
        ConfigReader(nlohmann::json::object(), source).fail("(top level)", "expected a JSON object, found " + json_type_name(value));
    ConfigReader top(value, source);
    if (top.require_int({"schema_version"}, 1, 1000) != 1) top.fail("schema_version", "expected 1");
    const nlohmann::json* list = top.find({"allreduce_latency"});
    if (!list || !list->is_array()) top.fail("allreduce_latency", "expected an array of {implementation, link, gpus, latency_s, source}");
    std::vector<LinkLatency> out;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const nlohmann::json& e = (*list)[i];
        const std::string prefix = "allreduce_latency[" + std::to_string(i) + "].";
        if (!e.is_object()) top.fail(prefix.substr(0, prefix.size() - 1), "expected an object");
        ConfigReader r(e, source, prefix);
        refuse_unknown(r, e, {"implementation", "link", "gpus", "latency_s", "source"});
        LinkLatency l;
        const auto impl = parse_allreduce(r.get_string("implementation").value_or(""));
        if (!impl || *impl == AllreduceImpl::Fixed) r.fail("implementation", "expected \"nccl\" or \"custom\"");
        l.implementation = *impl;
        const auto link = parse_link_family(r.get_string("link").value_or(""));
        if (!link || *link == LinkFamily::None) r.fail("link", "expected nvlink, pcie, xgmi, roce or ici");
        l.link = *link;
        l.gpus = r.require_int({"gpus"}, 2, 1024);
        const std::optional<double> t = r.get_number("latency_s");
        if (!t) r.fail("latency_s", "expected the latency in seconds");
        if (!within_bounds(Quantity::CollectiveLatency, *t)) r.fail("latency_s", bounds_refusal(Quantity::CollectiveLatency, *t));
        l.latency_s = *t;
        l.source = r.get_string("source").value_or("");
        if (l.source.empty()) r.fail("source", "expected where the figure was published");
        out.push_back(l);
    }
    return out;
}

std::optional<double> allreduce_latency(const std::vector<LinkLatency>& table, AllreduceImpl impl, LinkFamily link, std::int64_t gpus) {
    std::vector<std::pair<double, double>> points;  // (log2 GPUs, latency)
    for (const LinkLatency& l : table)
        if (l.implementation == impl && l.link == link) points.emplace_back(std::log2(static_cast<double>(l.gpus)), l.latency_s);
    if (points.empty()) return std::nullopt;
    std::sort(points.begin(), points.end());
    const double x = std::log2(static_cast<double>(std::max<std::int64_t>(2, gpus)));
    if (x <= points.front().first) return points.front().second;
    if (x >= points.back().first) return points.back().second;
    for (std::size_t i = 1; i < points.size(); ++i)
        if (x <= points[i].first) {
            const auto [x0, y0] = points[i - 1];
            const auto [x1, y1] = points[i];
            return x1 == x0 ? y1 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        }
    return points.back().second;
}

namespace {

// Linear in log2(GPUs) between the nearest points, held flat beyond them.
double log2_interpolate(std::vector<std::pair<double, double>> points, std::int64_t gpus) {
    std::sort(points.begin(), points.end());
    const double x = std::log2(static_cast<double>(std::max<std::int64_t>(2, gpus)));
    if (x <= points.front().first) return points.front().second;
    for (std::size_t i = 1; i < points.size(); ++i)
        if (x <= points[i].first) {
            const auto [x0, y0] = points[i - 1];
            const auto [x1, y1] = points[i];
            return x1 == x0 ? y1 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        }
    return points.back().second;
}

}  // namespace

std::vector<AllToAllLatency> parse_all_to_all_latencies(const nlohmann::json& value, const std::string& source) {
    if (!value.is_object())
        ConfigReader(nlohmann::json::object(), source).fail("(top level)", "expected a JSON object, found " + json_type_name(value));
    ConfigReader top(value, source);
    const nlohmann::json* list = top.find({"all_to_all_latency"});
    if (!list || !list->is_array())
        top.fail("all_to_all_latency", "expected an array of {implementation, op, gpus, tokens_per_rank, latency_s, source}");
    std::vector<AllToAllLatency> out;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const nlohmann::json& e = (*list)[i];
        const std::string prefix = "all_to_all_latency[" + std::to_string(i) + "].";
        if (!e.is_object()) top.fail(prefix.substr(0, prefix.size() - 1), "expected an object");
        ConfigReader r(e, source, prefix);
        refuse_unknown(r, e, {"implementation", "op", "gpus", "tokens_per_rank", "latency_s", "source"});
        AllToAllLatency l;
        l.implementation = r.get_string("implementation").value_or("");
        if (l.implementation != "deepep-low-latency") r.fail("implementation", "expected \"deepep-low-latency\"");
        const std::string op = r.get_string("op").value_or("");
        if (op != "dispatch" && op != "combine") r.fail("op", "expected \"dispatch\" or \"combine\"");
        l.op = op == "dispatch" ? AllToAllOp::Dispatch : AllToAllOp::Combine;
        l.gpus = r.require_int({"gpus"}, 2, 4096);
        l.tokens_per_rank = r.require_int({"tokens_per_rank"}, 1, 1'000'000);
        const std::optional<double> t = r.get_number("latency_s");
        if (!t) r.fail("latency_s", "expected the latency in seconds");
        if (!within_bounds(Quantity::CollectiveLatency, *t)) r.fail("latency_s", bounds_refusal(Quantity::CollectiveLatency, *t));
        l.latency_s = *t;
        l.source = r.get_string("source").value_or("");
        if (l.source.empty()) r.fail("source", "expected where the figure was published");
        out.push_back(l);
    }
    return out;
}

std::vector<Nic> parse_nics(const nlohmann::json& value, const std::string& source) {
    if (!value.is_object())
        ConfigReader(nlohmann::json::object(), source).fail("(top level)", "expected a JSON object, found " + json_type_name(value));
    ConfigReader top(value, source);
    const nlohmann::json* list = top.find({"nics"});
    if (!list || !list->is_array()) top.fail("nics", "expected an array of {id, name, bytes_per_s_per_direction, source}");
    std::vector<Nic> out;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const nlohmann::json& e = (*list)[i];
        const std::string prefix = "nics[" + std::to_string(i) + "].";
        if (!e.is_object()) top.fail(prefix.substr(0, prefix.size() - 1), "expected an object");
        ConfigReader r(e, source, prefix);
        refuse_unknown(r, e, {"id", "name", "bytes_per_s_per_direction", "source"});
        Nic n;
        n.id = r.get_string("id").value_or("");
        if (n.id.empty()) r.fail("id", "expected a short name such as \"ib-ndr\"");
        for (const Nic& seen : out)
            if (seen.id == n.id) r.fail("id", "expected a name not used before, found \"" + n.id + "\" twice");
        n.name = r.get_string("name").value_or("");
        if (n.name.empty()) r.fail("name", "expected the NIC's name");
        const std::optional<double> bw = r.get_number("bytes_per_s_per_direction");
        if (!bw) r.fail("bytes_per_s_per_direction", "expected the line rate in bytes per second per direction");
        if (!within_bounds(Quantity::LinkBandwidth, *bw)) r.fail("bytes_per_s_per_direction", bounds_refusal(Quantity::LinkBandwidth, *bw));
        n.bytes_per_s = *bw;
        n.source = r.get_string("source").value_or("");
        if (n.source.empty()) r.fail("source", "expected where the figure was published");
        out.push_back(n);
    }
    return out;
}

std::optional<double> all_to_all_latency(const std::vector<AllToAllLatency>& table, AllToAllOp op, std::int64_t gpus) {
    std::vector<std::pair<double, double>> points;  // (log2 GPUs, latency)
    for (const AllToAllLatency& l : table)
        if (l.op == op) points.emplace_back(std::log2(static_cast<double>(l.gpus)), l.latency_s);
    if (points.empty()) return std::nullopt;
    return log2_interpolate(std::move(points), gpus);
}

double EngineProfile::weights_fraction(const Gpu& gpu) const {
    const std::string& t = gpu.memory_technology;
    if (t.rfind("HBM", 0) == 0) return weights_hbm;
    if (t.rfind("GDDR", 0) == 0) return weights_gddr;
    if (t.rfind("LPDDR", 0) == 0) return weights_lpddr;
    return weights_other;
}

double EngineProfile::kernel(const std::string& family) const {
    auto it = kernel_factor.find(family);
    return it == kernel_factor.end() ? 1.0 : it->second;
}

double EngineProfile::allreduce_latency_s(const Gpu& gpu, std::int64_t tp) const {
    if (allreduce == AllreduceImpl::Fixed) return fixed_allreduce_latency_s;
    const LinkFamily link = link_family(gpu);
    // A custom one-shot all-reduce needs peer access between every pair of
    // GPUs: vLLM turns it off on PCIe beyond two GPUs and on world sizes it
    // has no kernel for (custom_all_reduce.py, CustomAllreduce.__init__:
    // `_SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]`, "not fully connected" check);
    // NCCL runs those all-reduces instead.
    const bool custom_ok = (link == LinkFamily::Nvlink || link == LinkFamily::Xgmi) && (tp == 2 || tp == 4 || tp == 6 || tp == 8);
    const AllreduceImpl impl = allreduce == AllreduceImpl::CustomOneShot && !custom_ok ? AllreduceImpl::Nccl : allreduce;
    if (auto l = allreduce_latency(links, impl, link, tp)) return *l;
    return fixed_allreduce_latency_s;
}

std::vector<std::string> profile_value_names() {
    std::vector<std::string> names = {"weights_fraction.hbm", "weights_fraction.gddr", "weights_fraction.lpddr", "weights_fraction.other",
                                      "kv_fraction",          "step_overhead_s",       "layer_overhead_s",       "flops_fraction.16bit",
                                      "flops_fraction.fp8",   "prefill_half_tokens",   "moe_efficiency",         "tp_flops_loss",
                                      "link_fraction"};
    for (const char* f : kFamilies) names.push_back(std::string("kernel_factor.") + f);
    return names;
}

namespace {

// The named scalar field, or nullptr for a kernel factor or an unknown name.
double* scalar_field(EngineProfile& p, const std::string& name) {
    if (name == "weights_fraction.hbm") return &p.weights_hbm;
    if (name == "weights_fraction.gddr") return &p.weights_gddr;
    if (name == "weights_fraction.lpddr") return &p.weights_lpddr;
    if (name == "weights_fraction.other") return &p.weights_other;
    if (name == "kv_fraction") return &p.kv_fraction;
    if (name == "step_overhead_s") return &p.step_overhead_s;
    if (name == "layer_overhead_s") return &p.layer_overhead_s;
    if (name == "flops_fraction.16bit") return &p.flops_16bit;
    if (name == "flops_fraction.fp8") return &p.flops_fp8;
    if (name == "prefill_half_tokens") return &p.prefill_half_tokens;
    if (name == "moe_efficiency") return &p.moe_efficiency;
    if (name == "tp_flops_loss") return &p.tp_flops_loss;
    if (name == "link_fraction") return &p.link_fraction;
    return nullptr;
}

bool is_kernel_factor(const std::string& name) {
    return name.rfind("kernel_factor.", 0) == 0;
}

}  // namespace

double& profile_value(EngineProfile& p, const std::string& name) {
    if (double* v = scalar_field(p, name)) return *v;
    if (is_kernel_factor(name)) return p.kernel_factor.try_emplace(name.substr(14), 1.0).first->second;
    throw Error(ErrorKind::Usage, "no profile value called " + name);
}

double profile_value(const EngineProfile& p, const std::string& name) {
    // Reading never inserts: a kernel factor the profile lacks is 1.
    if (is_kernel_factor(name)) return p.kernel(name.substr(14));
    if (double* v = scalar_field(const_cast<EngineProfile&>(p), name)) return *v;
    throw Error(ErrorKind::Usage, "no profile value called " + name);
}

EngineProfile parse_engine_profile(const nlohmann::json& value, const std::string& source) {
    if (!value.is_object())
        ConfigReader(nlohmann::json::object(), source).fail("(top level)", "expected a JSON object, found " + json_type_name(value));
    ConfigReader r(value, source);
    refuse_unknown(r, value,
                   {"schema_version", "id", "name", "description", "weights_fraction", "kv_fraction", "step_overhead_s", "layer_overhead_s",
                    "kernel_factor", "flops_fraction", "prefill_half_tokens", "moe_efficiency", "tp_flops_loss", "link_fraction", "allreduce",
                    "int4_group_bits", "quantize_head", "kv_cache_dtype", "fitted_on"});
    if (r.require_int({"schema_version"}, 1, 1000) != 1) r.fail("schema_version", "expected 1");
    EngineProfile p;
    p.id = r.get_string("id").value_or("");
    if (p.id.empty()) r.fail("id", "expected the profile's name, e.g. \"vllm\"");
    p.name = r.get_string("name").value_or(p.id);
    p.description = r.get_string("description").value_or("");
    if (auto w = r.child("weights_fraction")) {
        refuse_unknown(*w, value.at("weights_fraction"), {"hbm", "gddr", "lpddr", "other"});
        p.weights_hbm = read_bounded(*w, "hbm", Quantity::EfficiencyFraction, p.weights_hbm);
        p.weights_gddr = read_bounded(*w, "gddr", Quantity::EfficiencyFraction, p.weights_gddr);
        p.weights_lpddr = read_bounded(*w, "lpddr", Quantity::EfficiencyFraction, p.weights_lpddr);
        p.weights_other = read_bounded(*w, "other", Quantity::EfficiencyFraction, p.weights_other);
    }
    p.kv_fraction = read_bounded(r, "kv_fraction", Quantity::EfficiencyFraction, p.kv_fraction);
    p.step_overhead_s = read_bounded(r, "step_overhead_s", Quantity::StepOverhead, p.step_overhead_s);
    p.layer_overhead_s = read_number(r, "layer_overhead_s", 0, 0.01, p.layer_overhead_s, false);
    if (auto k = r.child("kernel_factor")) {
        p.kernel_factor.clear();
        for (const auto& [family, v] : value.at("kernel_factor").items()) {
            if (std::find(std::begin(kFamilies), std::end(kFamilies), family) == std::end(kFamilies))
                k->fail(family, "unknown weight format family (expected gguf, int4, int8, fp8, nvfp4, mxfp4, exl2 or mlc)");
            p.kernel_factor[family] = read_bounded(*k, family.c_str(), Quantity::EfficiencyFactor, 1.0);
        }
    }
    if (auto f = r.child("flops_fraction")) {
        refuse_unknown(*f, value.at("flops_fraction"), {"16bit", "fp8"});
        p.flops_16bit = read_bounded(*f, "16bit", Quantity::EfficiencyFraction, p.flops_16bit);
        p.flops_fp8 = read_bounded(*f, "fp8", Quantity::EfficiencyFraction, p.flops_fp8);
    }
    p.prefill_half_tokens = read_number(r, "prefill_half_tokens", 0, 1e6, p.prefill_half_tokens, false);
    p.moe_efficiency = read_bounded(r, "moe_efficiency", Quantity::EfficiencyFactor, p.moe_efficiency);
    p.tp_flops_loss = read_number(r, "tp_flops_loss", 0, 10, p.tp_flops_loss, false);
    p.link_fraction = read_bounded(r, "link_fraction", Quantity::EfficiencyFraction, p.link_fraction);
    if (auto a = r.child("allreduce")) {
        refuse_unknown(*a, value.at("allreduce"), {"implementation", "latency_s"});
        const auto impl = parse_allreduce(a->get_string("implementation").value_or(""));
        if (!impl) a->fail("implementation", "expected \"fixed\", \"nccl\" or \"custom\"");
        p.allreduce = *impl;
        p.fixed_allreduce_latency_s = read_bounded(*a, "latency_s", Quantity::CollectiveLatency, p.fixed_allreduce_latency_s);
    }
    p.int4_group_bits = read_number(r, "int4_group_bits", 0, 64, p.int4_group_bits, false);
    p.quantize_head = r.get_bool("quantize_head").value_or(false);
    if (auto d = r.get_string("kv_cache_dtype")) {
        p.kv_cache_dtype = parse_dtype(*d);
        if (!p.kv_cache_dtype || *d == "auto") r.fail("kv_cache_dtype", "expected fp32, fp16, bf16, fp8, int8 or int4, found \"" + *d + "\"");
    }
    if (auto f = r.child("fitted_on")) {
        const std::vector<std::string> names = profile_value_names();
        for (const auto& [name, v] : value.at("fitted_on").items()) {
            if (std::find(names.begin(), names.end(), name) == names.end()) f->fail(name, "not a profile value");
            if (!v.is_string()) f->fail(name, "expected a string naming the rows");
            p.fitted_on[name] = v.get<std::string>();
        }
    }
    return p;
}

}  // namespace kvplan
