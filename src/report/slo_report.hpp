// Renders `kvplan recommend --slo` (the SLO capacity search on the
// simulator, docs/recommend.md): a table of the cheapest candidates with
// their latencies at the rate found and their engine commands, or JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/plan/capacity_search.hpp"
#include "core/plan/slo_result.hpp"
#include "core/sim/slo_search.hpp"
#include "core/speed/recommend.hpp"
#include "report/fields.hpp"
#include "report/recommend_report.hpp"

namespace kvplan {

// A unit's sides as the tables and sentences name them: "h200 TP 2/4"
// when both are TP instances, else each side in words ("TP 8", "DP 8 + EP
// 8"): "h200 DP 8 + EP 8/TP 8". No commas (a CSV field).
std::string unit_sides(const SloCandidate& c);

// A searched candidate that did not qualify (core/plan/capacity_search.hpp,
// rejection_of), in words: a cost past the `top` cheapest at `target_rps`,
// a burst, or the target it misses.
// A stability breach (core/sim/stability.hpp) in words.
std::string breach_words(Stability::Breach b);
// How the long runs confirmed a candidate's rate, in one sentence.
std::string sustained_words(const SearchOutcome& x, std::int64_t short_requests);
std::string outcome_words(const SearchOutcome& x, double target_rps, std::size_t top);
// Why `c` was rejected, after its kind's word: the error it met, or its
// outcome or its rank past --top in words.
std::string rejection_reason(const SloRecommendResult& r, const SloCandidate& c);
// What was replayed: the workload, and for a long trace how much of it.
std::string workload_words(const SloRecommendResult& r);
// A qualifying candidate ranked past --top: "ranked 6, 12.40 USD/hour against the best's 9.80".
std::string cost_rank_words(const SloCandidate& c, const SloCandidate& best, std::size_t rank);
// Nothing qualifies: the candidates that were too few requests' burst, or
// the rejected candidate closest to its target alone, and what would pass.
std::string nearest_words(const std::vector<SloCandidate>& rejected, std::int64_t requests_per_run, std::int64_t default_requests);

// One ranked candidate as the search's tables see it.
struct SloRow {
    const SloRecommendResult* result = nullptr;
    const SloCandidate* candidate = nullptr;
    std::size_t rank = 0;  // 1: the best
};
// The fleet table's columns (the rate per replica, replicas, cost) and the
// latency table's (percentiles at that rate): each field's heading and cell
// for the text and Markdown tables, its key and value for the CSV, keyed as
// render_slo_json keys the same figures. The fields not in_fit are the ones
// the 100-column table leaves out when it would not fit.
const Fields<SloRow>& slo_fleet_fields();
const Fields<SloRow>& slo_latency_fields();

std::string render_slo_table(const SloRecommendResult& r);
std::string render_slo_json(const SloRecommendResult& r);
// Both tables as Markdown, then the best's commands.
std::string render_slo_markdown(const SloRecommendResult& r);
// One row per candidate shown (best first, at most --top): the fleet's
// fields, then the latency's; an empty table (the header) when none qualifies.
std::string render_slo_csv(const SloRecommendResult& r);

}  // namespace kvplan
