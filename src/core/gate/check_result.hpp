// What `kvplan check` found (printed by report/check_report.hpp in five formats).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gate/regression.hpp"
#include "core/output_width.hpp"

namespace kvplan {

struct CheckReport {
    std::string baseline_path;  // as given on the command line
    Tolerances tolerances;      // the default, and the figures with their own
    bool strict = false;
    bool updated = false;       // --update wrote the recomputed figures
    bool changes_only = false;  // text: list only figures that are not unchanged
    Width width = Width::Fit;   // text: Wide repeats the scenario on every row (--wide)
    std::vector<ScenarioCheck> checks;
    ProvenanceCheck provenance;  // notes only: what resolved or changed differently from the baseline
    CheckSummary summary;
    int exit_code = 0;
};

}  // namespace kvplan
