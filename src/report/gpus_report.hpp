// Renders the hardware database for `kvplan gpus` (table, Markdown, JSON).
#pragma once

#include <string>
#include <vector>

#include "core/hardware.hpp"
#include "report/fields.hpp"
#include "report/table.hpp"

namespace kvplan {

// One row per device: the table's columns and the JSON's members.
const Fields<Gpu>& gpu_fields();

// Fitted to 100 columns unless `width` is Wide (`--wide`: names too, units in the cells).
std::string render_gpus_table(const std::vector<Gpu>& gpus, Width width = Width::Fit);
std::string render_gpus_markdown(const std::vector<Gpu>& gpus);
std::string render_gpus_json(const std::vector<Gpu>& gpus);

}  // namespace kvplan
