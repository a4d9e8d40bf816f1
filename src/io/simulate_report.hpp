// Printers for `kvplan simulate`: the summary table and its one-sentence
// answer, JSON (docs/simulate.md), and the per-request and per-second CSVs.
#pragma once

#include <string>

#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"

namespace kvplan {

struct SimulateResult {
    std::string engine = "vllm";  // whose scheduler: vllm|sglang (config then holds SGLang's figures)
    std::string schedule_policy = "fcfs";
    std::string model_label;
    std::string gpu_name;
    std::string workload;        // "trace.csv (19,366 requests)" or "Poisson 5 req/s, 1,000 requests"
    SchedulerConfig config;
    std::int64_t max_model_len = 0;
    std::string pool_source;     // where num_gpu_blocks came from
    std::string router = "round-robin";  // with more than one replica
    std::int64_t pp = 1;         // pipeline stages per replica
    SimRun run;
    SimSummary summary;
    Slo slo;
};

std::string render_simulate_table(const SimulateResult& r);
std::string render_simulate_json(const SimulateResult& r);
std::string render_requests_csv(const SimulateResult& r);
std::string render_timeseries_csv(const SimulateResult& r);

}  // namespace kvplan
