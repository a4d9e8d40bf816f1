#include "core/speed/calibration.hpp"

#include "core/config_reader.hpp"

namespace kvplan {

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
    Calibration c;
    c.device = r.get_string("device").value_or("");
    auto bw = r.get_number("measured_bandwidth_bytes_per_s");
    if (!bw) r.fail("measured_bandwidth_bytes_per_s", "required field is missing");
    if (!(*bw > 0 && *bw < 1e15)) r.fail("measured_bandwidth_bytes_per_s", "expected bytes per second in (0, 1e15), found " + std::to_string(*bw));
    c.bandwidth_bytes_per_s = *bw;
    if (auto f = r.get_number(flop_key)) {
        if (!(*f > 0 && *f < 1e18)) r.fail(flop_key, "expected FLOP per second in (0, 1e18), found " + std::to_string(*f));
        c.flops_per_s = *f;
    }
    if (auto s = r.get_number("step_overhead_s")) {
        if (!(*s >= 0 && *s < 1)) r.fail("step_overhead_s", "expected seconds in [0, 1), found " + std::to_string(*s));
        c.step_overhead_s = *s;
    }
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
