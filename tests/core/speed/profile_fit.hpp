// Fitting an engine profile to published measurements, and the
// leave-one-source-out check of that fit (docs/accuracy.md, "Engine
// profiles: how they were fitted").
//
// The objective is the mean absolute log error, |ln(predicted / measured)|,
// over the engine's predictable rows: symmetric in over- and
// under-prediction and not dominated by one wild row. Each value is fitted
// in turn by golden-section search over its range (coordinate descent,
// three sweeps), and only where at least two training rows depend on it;
// every other value keeps the generic profile's.
#pragma once

#include <string>
#include <vector>

#include "accuracy_rows.hpp"

namespace kvplan::test {

// The values fitted for `engine` (docs/accuracy.md lists them per engine).
std::vector<std::string> fitted_values(const std::string& engine);

// Whether `row`'s prediction depends on the profile value `name`.
bool depends_on(const AccuracyRow& row, const std::string& name);

struct FitResult {
    EngineProfile profile;
    std::vector<std::string> fitted;  // the values that had enough rows
    double objective = 0;             // mean |ln(pred/meas)| on the training rows
};

// Fits `engine`'s values on `rows` (predictable rows of that engine),
// starting from `start` (the generic profile with the engine's own
// implementation choices). Values are rounded to three significant figures.
FitResult fit_profile(const std::string& engine, const EngineProfile& start, const std::vector<const AccuracyRow*>& rows);
// The same, fitting only `names`.
FitResult fit_values(const std::vector<std::string>& names, const EngineProfile& start, const std::vector<const AccuracyRow*>& rows);

}  // namespace kvplan::test
