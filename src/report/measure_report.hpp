// Renders `kvplan measure` results: measured beside predicted, the host's
// bandwidth, and the calibration JSON (which `kvplan roofline --calibration`
// reads back; schema in docs/measure.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/speed/measure_result.hpp"

namespace kvplan {

std::string render_measure_table(const MeasureResult& r);
// The calibration file: a valid `--calibration` input with the full results
// (schema_version 2: every key names its unit, byte counts are integers).
std::string render_measure_json(const MeasureResult& r);

}  // namespace kvplan
