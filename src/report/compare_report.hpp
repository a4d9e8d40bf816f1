// `kvplan simulate --compare`: a served run's measured figures beside kvplan's
// simulation of the same workload (core/sim/served_run.hpp), with the error
// and one sentence saying which way kvplan errs (docs/compare.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/sim/served_run.hpp"

namespace kvplan {

std::string render_compare_table(const ServedComparison& c);
nlohmann::ordered_json compare_json(const ServedComparison& c);
// "kvplan is pessimistic here: ..." from the E2E mean's error.
std::string compare_sentence(const ServedComparison& c);

}  // namespace kvplan
