// Renders the engine speed profiles (`kvplan engines`): a table of the
// values, one profile's values with their provenance, and JSON.
#pragma once

#include <string>
#include <vector>

#include "core/speed/engine_profile.hpp"
#include "report/fields.hpp"

namespace kvplan {

// One row per profile: the table's columns and the JSON's members.
const Fields<EngineProfile>& engine_fields();

std::string render_engines_table(const std::vector<EngineProfile>& engines, bool markdown);
std::string render_engine_detail(const EngineProfile& engine, bool markdown);
// One profile in the file schema of models/engines/*.json, which --engine-file reads back.
std::string render_engine_file_json(const EngineProfile& engine);
// Every profile (each in that schema) and the interconnect latency table.
std::string render_engines_json(const std::vector<EngineProfile>& engines, const std::vector<LinkLatency>& links);

}  // namespace kvplan
