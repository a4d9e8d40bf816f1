// `kvplan diff`'s report: two configurations' sizing and capacity side by
// side, with the change in each figure and whether it is better or worse
// for serving.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/gate/diff_result.hpp"
#include "core/gate/figures.hpp"
#include "report/fields.hpp"
#include "report/table.hpp"

namespace kvplan {

// One row per figure: the table's columns and the JSON's members.
const Fields<DiffRow>& diff_row_fields();

// Fitted to 100 columns unless `width` is Wide (`--wide`: B - A, and exact bytes).
std::string render_diff_table(const DiffResult& result, Width width = Width::Fit);
std::string render_diff_markdown(const DiffResult& result);
std::string render_diff_json(const DiffResult& result);

}  // namespace kvplan
