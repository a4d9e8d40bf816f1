#include "core/speed/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/bounds.hpp"
#include "core/config_reader.hpp"

namespace kvplan {

const char* collective_op_name(CollectiveOp op) {
    switch (op) {
        case CollectiveOp::AllReduce: return "all_reduce";
        case CollectiveOp::AllGather: return "all_gather";
        case CollectiveOp::ReduceScatter: return "reduce_scatter";
    }
    return "all_reduce";
}

namespace {

CollectiveOp read_op(const ConfigReader& r) {
    const std::string name = r.get_string("op").value_or("");
    for (CollectiveOp op : {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter})
        if (name == collective_op_name(op)) return op;
    r.fail("op", "expected all_reduce, all_gather or reduce_scatter, found \"" + name + "\"");
}

std::string require_string(const ConfigReader& r, const char* key) {
    const std::string s = r.get_string(key).value_or("");
    if (s.empty()) r.fail(key, "expected a non-empty string");
    return s;
}

double read_latency(const ConfigReader& r, const char* key, double v) {
    if (!within_bounds(Quantity::CollectiveLatency, v)) r.fail(key, bounds_refusal(Quantity::CollectiveLatency, v));
    return v;
}

double require_number(const ConfigReader& r, const char* key) {
    const std::optional<double> v = r.get_number(key);
    if (!v) r.fail(key, "expected a number");
    return *v;
}

// Each entry of the array `key`, as a reader named "key[i].", holding no field but `known`.
template <typename F>
void each(const ConfigReader& top, const char* key, const std::vector<std::string>& known, F&& read) {
    const nlohmann::json* list = top.find({key});
    if (!list || !list->is_array()) top.fail(key, "expected an array");
    for (std::size_t i = 0; i < list->size(); ++i) {
        const std::string prefix = std::string(key) + "[" + std::to_string(i) + "].";
        if (!(*list)[i].is_object()) top.fail(prefix.substr(0, prefix.size() - 1), "expected an object");
        const ConfigReader r((*list)[i], top.source(), prefix);
        for (const auto& [field, value] : (*list)[i].items())
            if (std::find(known.begin(), known.end(), field) == known.end()) r.fail(field, "unknown field");
        read(r);
    }
}

AllreduceGrid read_grid(const ConfigReader& r) {
    AllreduceGrid g{require_string(r, "device"), require_string(r, "engine"), require_string(r, "version"), r.require_int({"gpus"}, 2, 1024), {}, {}};
    for (std::int64_t b : r.require_int_list("bytes", 1, std::int64_t{1} << 40)) g.bytes.push_back(static_cast<double>(b));
    const nlohmann::json* t = r.find({"latency_s"});
    if (!t || !t->is_array() || t->size() != g.bytes.size() || g.bytes.empty())
        r.fail("latency_s", "expected an array of seconds, one per entry of bytes");
    for (std::size_t i = 0; i < t->size(); ++i) {
        if (!(*t)[i].is_number()) r.fail("latency_s", "expected numbers");
        // A whole message's time, not a latency: up to seconds for 256 MB over PCIe.
        const double v = (*t)[i].get<double>();
        if (!(v > 0 && v <= 10)) r.fail("latency_s", "expected seconds in (0, 10], found " + std::to_string(v));
        g.latency_s.push_back(v);
        if (i > 0 && !(g.bytes[i] > g.bytes[i - 1])) r.fail("bytes", "expected ascending sizes");
    }
    return g;
}

CollectiveFit read_fit(const ConfigReader& r) {
    CollectiveFit f{require_string(r, "device"), read_op(r), require_string(r, "version"), r.require_int({"gpus"}, 2, 1024), 0, 0};
    f.latency_s = read_latency(r, "latency_s", require_number(r, "latency_s"));
    f.bytes_per_s = require_number(r, "bytes_per_s");
    if (!within_bounds(Quantity::LinkBandwidth, f.bytes_per_s)) r.fail("bytes_per_s", bounds_refusal(Quantity::LinkBandwidth, f.bytes_per_s));
    return f;
}

FamilyCurve read_family(const ConfigReader& r) {
    FamilyCurve c;
    const auto link = parse_link_family(r.get_string("link").value_or(""));
    if (!link || *link == LinkFamily::None) r.fail("link", "expected nvlink, pcie, xgmi, roce or ici");
    c.link = *link;
    c.op = read_op(r);
    c.gpus = r.require_int({"gpus"}, 2, 1024);
    c.latency_s = read_latency(r, "latency_s", require_number(r, "latency_s"));
    // Message bytes per second over the datasheet link: above 1 where a rank
    // receives less than the message (an all-gather's own share).
    c.link_fraction = require_number(r, "link_fraction");
    if (!(c.link_fraction > 0 && c.link_fraction <= 4)) r.fail("link_fraction", "expected a number in (0, 4]");
    c.fitted_on = require_string(r, "fitted_on");
    return c;
}

}  // namespace

CollectiveTables parse_collectives(const nlohmann::json& value, const std::string& source) {
    if (!value.is_object())
        ConfigReader(nlohmann::json::object(), source).fail("(top level)", "expected a JSON object, found " + json_type_name(value));
    ConfigReader top(value, source);
    if (top.require_int({"schema_version"}, 1, 1000) != 1) top.fail("schema_version", "expected 1");
    CollectiveTables t;
    each(top, "allreduce", {"device", "engine", "version", "gpus", "bytes", "latency_s"},
         [&](const ConfigReader& r) { t.allreduce.push_back(read_grid(r)); });
    each(top, "nccl", {"device", "op", "version", "gpus", "latency_s", "bytes_per_s"}, [&](const ConfigReader& r) { t.nccl.push_back(read_fit(r)); });
    each(top, "families", {"link", "op", "gpus", "latency_s", "link_fraction", "fitted_on"},
         [&](const ConfigReader& r) { t.families.push_back(read_family(r)); });
    return t;
}

double CollectiveCurve::time_s(double b) const {
    if (bytes.empty()) return fixed_s + (bytes_per_s > 0 ? b / bytes_per_s : 0.0);
    if (b <= bytes.front()) return latency_s.front();
    // The segment holding b, or the last one beyond the largest size.
    const auto hi =
        std::min<std::size_t>(static_cast<std::size_t>(std::upper_bound(bytes.begin(), bytes.end(), b) - bytes.begin()), bytes.size() - 1);
    const std::size_t lo = hi - 1;
    const double slope = (latency_s[hi] - latency_s[lo]) / (bytes[hi] - bytes[lo]);
    return std::max(latency_s[lo] + slope * (b - bytes[lo]), latency_s.front());
}

CollectiveCurve collective_curve(const CollectiveTables& tables, const Gpu& gpu, CollectiveOp op, std::int64_t gpus, const std::string& engine) {
    CollectiveCurve c;
    // All-reduce tables are one engine's implementation; the NCCL ones are any engine's.
    if (op == CollectiveOp::AllReduce) {
        for (const AllreduceGrid& g : tables.allreduce)
            if (g.device == gpu.id && g.gpus == gpus && g.engine == engine && g.bytes.size() >= 2) {
                c.source = CollectiveCurve::Source::Measured;
                c.bytes = g.bytes;
                c.latency_s = g.latency_s;
                c.label = "measured tables, " + std::string(g.engine == "vllm" ? "vLLM" : g.engine) + " " + g.version + ", " + g.device;
                return c;
            }
        if (std::none_of(tables.allreduce.begin(), tables.allreduce.end(), [&](const AllreduceGrid& g) { return g.engine == engine; })) return c;
    } else {
        for (const CollectiveFit& f : tables.nccl)
            if (f.device == gpu.id && f.op == op && f.gpus == gpus) {
                c.source = CollectiveCurve::Source::Measured;
                c.fixed_s = f.latency_s;
                c.bytes_per_s = f.bytes_per_s;
                c.label = "measured tables, NCCL " + f.version + ", " + f.device;
                return c;
            }
    }
    const double link = static_cast<double>(gpu.interconnect_bytes_per_s);
    const LinkFamily family = link_family(gpu);
    for (const FamilyCurve& f : tables.families)
        if (f.link == family && f.op == op && f.gpus == gpus && link > 0) {
            c.source = CollectiveCurve::Source::Family;
            c.fixed_s = f.latency_s;
            c.bytes_per_s = f.link_fraction * link;
            c.label = std::string(link_family_name(family)) + " curve fitted on " + f.fitted_on;
            return c;
        }
    return c;
}

}  // namespace kvplan
