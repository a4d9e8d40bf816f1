// Renders `kvplan recommend --slo` (the SLO capacity search on the
// simulator, docs/recommend.md): a table of the cheapest candidates with
// their latencies at the rate found and their engine commands, or JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/sim/slo_search.hpp"
#include "core/speed/recommend.hpp"
#include "report/recommend_report.hpp"
#include "core/plan/slo_result.hpp"

namespace kvplan {

// A unit's sides as the tables and sentences name them: "h200 TP 2/4"
// when both are TP instances, else each side in words ("TP 8", "DP 8 + EP
// 8"): "h200 DP 8 + EP 8/TP 8". No commas (a CSV field).
std::string unit_sides(const SloCandidate& c);

std::string render_slo_table(const SloRecommendResult& r);
std::string render_slo_json(const SloRecommendResult& r);

}  // namespace kvplan
