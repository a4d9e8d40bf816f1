// A served run as its own tool measured it: the workload it replays (core/sim/workload.hpp)
// and, per request, the latencies the engine's users saw; io/served_run_reader reads
// `vllm bench serve --save-detailed` results and per-request server timestamps into it.
// `compare_served` puts kvplan's simulation of the same workload beside it
// (`kvplan simulate --compare`, docs/compare.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"
#include "core/sim/workload.hpp"

namespace kvplan {

// Where a run's latencies start, as the tool that measured them counts.
enum class ServedClock {
    RequestSent,  // vllm bench serve: from the client sending the request (start_times)
    Queued,       // server timestamps: from the engine queueing it (queued_ts)
};

// One request as measured; seconds. TPOT and the token gaps are derived from
// these as the tool does (metrics.hpp): TPOT = (e2e - ttft) / (output - 1).
struct MeasuredRequest {
    double ttft_s = 0;
    double e2e_s = 0;
    std::int64_t output_tokens = 0;
    std::vector<double> itl_s;  // the gaps between streamed chunks; empty when the run has none
};

// One second of the engine's periodic log (vLLM's "Running: N reqs, Waiting: N reqs,
// GPU KV cache usage: X%"), as LLMServingSim's timeseries.csv records it.
struct MeasuredSecond {
    double t_s = 0;  // seconds since the run's clock started
    std::int64_t running = 0, waiting = 0;
    double kv_cache_usage = 0;  // 0 to 1
};

struct ServedRun {
    Workload workload;  // what `simulate --trace` replays
    ServedClock clock = ServedClock::RequestSent;
    std::vector<MeasuredRequest> requests;  // in workload order; empty: the trace has no measured timings
    std::vector<MeasuredSecond> series;     // empty: no per-second log beside it
    bool series_kv = true;                  // false: the log's KV usage column was not recorded (all zero while requests ran)
    double duration_s = 0;                  // as the tool counts it (vllm bench: its `duration`)
    std::int64_t failed = 0;                // requests the tool counted as failed, left out of both sides
    bool has_itl = false;                   // per-token (per-chunk) times recorded
};

// The measured figures, with the tool's definitions: TPOT over requests of more
// than one output token; ITL over every recorded gap.
struct ServedSummary {
    Distribution ttft_s, tpot_s, itl_s, e2e_s;
    double output_tokens_per_s = 0, requests_per_s = 0;
};
ServedSummary summarise_served(const ServedRun& run);

// A second of both series, measured and simulated, at the same offset from each clock's start.
struct SeriesPair {
    double t_s = 0;
    MeasuredSecond measured, simulated;
};

struct ServedComparison {
    ServedClock clock = ServedClock::RequestSent;
    bool has_itl = false;
    std::int64_t failed = 0;
    ServedSummary measured;
    ServedSummary simulated;                // the simulation's figures (SimSummary), the same fields
    std::vector<SeriesPair> series;         // empty without a measured per-second log
    bool series_kv = true;                  // the measured series holds KV usage
    std::vector<MeasuredRequest> requests;  // the measured requests, for --plot's CDFs
};

// Relative error of `simulated` against `measured` ((s - m) / m); nullopt when m is 0.
std::optional<double> relative_error(double measured, double simulated);

ServedComparison compare_served(const ServedRun& run, const SimSummary& sim, const std::vector<TimePoint>& sim_series);

}  // namespace kvplan
