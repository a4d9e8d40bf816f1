#include "core/speed/calibration.hpp"

#include <algorithm>
#include <vector>

#include "core/bounds.hpp"
#include "core/config_reader.hpp"

namespace kvplan {

namespace {

// Every key `kvplan measure --output` writes (report/measure_report.cpp),
// less the FLOP/s key of the other schema: a misspelt key would otherwise be
// ignored while the output says FLOP/s were measured (issue 44).
void refuse_unknown_keys(const ConfigReader& r, const nlohmann::json& value, const char* flop_key) {
    std::vector<std::string> known = {"schema_version", "device",          "model",
                                      "precision",      "threads",         "layers_measured",
                                      "layers_total",   "repeats",         "measured_bandwidth_bytes_per_s",
                                      flop_key,         "step_overhead_s", "stream",
                                      "matrix_product", "engine",          "engine_device",
                                      "decode",         "prefill",         "warnings",
                                      "notes"};
    // Schema 1 is also what kvplan-gpu-bench writes (kernels/cuda/gpu_bench.cu).
    if (std::string(flop_key) == "measured_flops_per_s")
        known.insert(known.end(), {"compute_capability", "multiprocessors", "memory_bytes", "free_memory_bytes", "bandwidth", "kv_dtype"});
    for (const auto& [key, v] : value.items()) {
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        r.fail(key, "unknown key (expected one of: " + list + ")");
    }
}

// The figure at `key`, held to its row of the bounds table (core/bounds.hpp).
std::optional<double> bounded(const ConfigReader& r, const char* key, Quantity q) {
    const std::optional<double> v = r.get_number(key);
    if (v && !within_bounds(q, *v)) r.fail(key, bounds_refusal(q, *v));
    return v;
}

}  // namespace

Calibration parse_calibration(const nlohmann::json& value, const std::string& source) {
    if (!value.is_object())
        ConfigReader(nlohmann::json::object(), source).fail("(top level)", "expected a JSON object, found " + json_type_name(value));
    ConfigReader r(value, source);
    const std::int64_t version = r.require_int({"schema_version"}, 1, 1000);
    if (version != 1 && version != 2)
        r.fail("schema_version",
               "expected 1 or 2, found " + std::to_string(version) + " (re-run kvplan measure --output FILE to write a file this kvplan reads)");
    // Version 2 names the unit in every key: FLOP/s is `measured_flop_per_s`;
    // version 1 files (what measure wrote before schema 2, or hand-written) say `measured_flops_per_s`.
    const char* flop_key = version == 1 ? "measured_flops_per_s" : "measured_flop_per_s";
    refuse_unknown_keys(r, value, flop_key);
    Calibration c;
    c.device = r.get_string("device").value_or("");
    auto bw = bounded(r, "measured_bandwidth_bytes_per_s", Quantity::MeasuredBandwidth);
    if (!bw) r.fail("measured_bandwidth_bytes_per_s", "required field is missing");
    c.bandwidth_bytes_per_s = *bw;
    c.flops_per_s = bounded(r, flop_key, Quantity::MeasuredFlops);
    c.step_overhead_s = bounded(r, "step_overhead_s", Quantity::StepOverhead);
    return c;
}

Efficiency apply_calibration(Efficiency e, const Calibration& c, const std::string& source) {
    e.measured_bandwidth_bytes_per_s = c.bandwidth_bytes_per_s;
    if (c.flops_per_s) e.measured_flops_per_s = *c.flops_per_s;
    if (c.step_overhead_s) e.step_overhead_s = *c.step_overhead_s;
    e.calibration_source = source + (c.device.empty() ? "" : " (" + c.device + ")");
    return e;
}

}  // namespace kvplan
