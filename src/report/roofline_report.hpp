// Renders `kvplan roofline` results: the device's achievable figures, one row
// per batch size, the step's terms with their shares, and the regime changes
// in words (table, Markdown, CSV, JSON; schema in docs/roofline.md).
#pragma once

#include <string>

#include "core/model/model_spec.hpp"
#include "core/speed/roofline.hpp"
#include "core/speed/roofline_result.hpp"
#include "report/table.hpp"

namespace kvplan {

// Fitted to 100 columns unless `width` is Wide (`--wide`).
std::string render_roofline_table(const RooflineResult& r, Width width = Width::Fit);
std::string render_roofline_markdown(const RooflineResult& r);
std::string render_roofline_csv(const RooflineResult& r);
std::string render_roofline_json(const RooflineResult& r);

}  // namespace kvplan
