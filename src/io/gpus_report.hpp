// Renders the hardware database for `kvplan gpus` (table, Markdown, JSON).
#pragma once

#include <string>
#include <vector>

#include "core/hardware.hpp"

namespace kvplan {

std::string render_gpus_table(const std::vector<Gpu>& gpus);
std::string render_gpus_markdown(const std::vector<Gpu>& gpus);
std::string render_gpus_json(const std::vector<Gpu>& gpus);

}  // namespace kvplan
