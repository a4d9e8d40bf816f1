// `kvplan check`'s report in five formats from one result: text for people,
// JSON for scripts, JUnit XML for every CI server's test view, GitHub
// workflow commands (annotations on the baseline file), and Markdown for a
// job summary. Every format is deterministic: no times, no absolute paths.
#pragma once

#include <string>
#include <vector>

#include "core/gate/check_result.hpp"
#include "core/gate/regression.hpp"
#include "report/table.hpp"

namespace kvplan {

std::string render_check_text(const CheckReport& report);
std::string render_check_json(const CheckReport& report);
std::string render_check_junit(const CheckReport& report);
std::string render_check_github(const CheckReport& report);
std::string render_check_markdown(const CheckReport& report);

// The provenance notes in report order: "kvplan changed: ...", then one per
// model that resolved differently or whose config changed; or one saying the
// baseline records no provenance.
std::vector<std::string> provenance_notes(const ProvenanceCheck& provenance);

// "check passed: 96 scenarios, 480 figures: 480 unchanged (tolerance 0%)"
std::string check_summary_line(const CheckReport& report);

// How a figure's value prints: "131,072", "0.00612346", "n/a" for null.
std::string figure_value_text(const FigureValue& value);

// "+2.94%", "-0.50%", "n/a" when there is no relative change.
std::string change_text(const FigureCheck& check);

}  // namespace kvplan
