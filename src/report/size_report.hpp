// Renders `kvplan size` results. The command computes a SizeResult; these
// functions only format it (human table, Markdown, JSON; schema in
// docs/size.md).
#pragma once

#include <string>
#include <vector>

#include "core/memory/kv_size.hpp"
#include "core/memory/size_result.hpp"
#include "core/model/model_spec.hpp"
#include "core/model/weights.hpp"
#include "report/fields.hpp"
#include "report/table.hpp"

namespace kvplan {

// One row per layer group: the table's columns and the JSON's members.
const Fields<LayerGroup>& layer_group_fields();

// The formula with the model's numbers filled in, one line per layer group.
std::vector<std::string> formula_lines(const KvSizing& kv);

// Fitted to 100 columns (long lines wrapped) unless `width` is Wide (`--wide`).
std::string render_size_table(const SizeResult& r, Width width = Width::Fit);
std::string render_size_markdown(const SizeResult& r);
std::string render_size_json(const SizeResult& r);
// One row per layer group plus a "total" row; raw integers, units in the headers.
std::string render_size_csv(const SizeResult& r);

}  // namespace kvplan
