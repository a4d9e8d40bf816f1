// A calibration: figures measured on a real device (`kvplan measure
// --output FILE`) that replace the datasheet fractions in the step-cost model.
// The file is JSON (schema in docs/roofline.md); this parses an already-read
// value, the caller reads the file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/speed/step_cost.hpp"

namespace kvplan {

struct Calibration {
    std::string device;                 // what it was measured on
    double bandwidth_bytes_per_s = 0;   // measured_bandwidth_bytes_per_s
    std::optional<double> flops_per_s;  // measured_flop_per_s (schema 2), measured_flops_per_s (schema 1)
    std::optional<double> step_overhead_s;
};

// Throws Error(Data) naming `source` and the field for a missing or bad value
// or an unknown schema_version.
Calibration parse_calibration(const nlohmann::json& value, const std::string& source);

// `base` with the measured figures in place of the datasheet fractions.
Efficiency apply_calibration(Efficiency base, const Calibration& c, const std::string& source);

}  // namespace kvplan
