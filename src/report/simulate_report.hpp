// Printers for `kvplan simulate`: the summary table and its one-sentence
// answer, JSON (docs/simulate.md), and the per-request and per-second CSVs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"
#include "core/sim/simulate_result.hpp"
#include "report/fields.hpp"

namespace kvplan {

// One latency metric: its name in the table ("TTFT") and its distribution in
// seconds; the JSON holds it under a key that names the unit (ttft_s).
struct LatencyRow {
    std::string name;
    Distribution seconds;
};
const Fields<LatencyRow>& latency_fields();

std::string render_simulate_table(const SimulateResult& r);
std::string render_simulate_json(const SimulateResult& r);
std::string render_requests_csv(const SimulateResult& r);
std::string render_timeseries_csv(const SimulateResult& r);

}  // namespace kvplan
