#include "core/sim/served_run.hpp"

#include <cmath>
#include <map>

namespace kvplan {

// The figures `vllm bench serve` prints (vllm/benchmarks/serve.py,
// calculate_metrics): TTFT and E2E per request, TPOT = (e2e - ttft) /
// (output - 1) over requests of more than one token, ITL over every gap,
// throughput over the run's duration.
ServedSummary summarise_served(const ServedRun& run) {
    std::vector<double> ttft, tpot, itl, e2e;
    std::int64_t output = 0;
    for (const MeasuredRequest& r : run.requests) {
        ttft.push_back(r.ttft_s);
        e2e.push_back(r.e2e_s);
        if (r.output_tokens > 1) tpot.push_back((r.e2e_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1));
        itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
        output += r.output_tokens;
    }
    ServedSummary s{distribution(ttft), distribution(tpot), distribution(itl), distribution(e2e)};
    if (run.duration_s > 0) {
        s.output_tokens_per_s = static_cast<double>(output) / run.duration_s;
        s.requests_per_s = static_cast<double>(run.requests.size()) / run.duration_s;
    }
    return s;
}

std::optional<double> relative_error(double measured, double simulated) {
    if (measured == 0) return std::nullopt;
    return (simulated - measured) / measured;
}

namespace {

// The simulated log by whole second (a TimePoint stands for `seconds` equal lines).
std::map<std::int64_t, MeasuredSecond> simulated_seconds(const std::vector<TimePoint>& series) {
    std::map<std::int64_t, MeasuredSecond> out;
    for (const TimePoint& p : series)
        for (std::int64_t k = 0; k < p.seconds; ++k) {
            const auto t = static_cast<std::int64_t>(std::llround(p.t_s)) + k;
            out[t] = MeasuredSecond{static_cast<double>(t), p.running, p.waiting, p.kv_cache_usage};
        }
    return out;
}

}  // namespace

// Each measured second beside the simulated one at the same whole second
// from its clock's start (vLLM's log starts with the benchmark, kvplan's
// at the first arrival); a second the simulation has already finished
// reads as an idle engine.
ServedComparison compare_served(const ServedRun& run, const SimSummary& sim, const std::vector<TimePoint>& sim_series) {
    ServedComparison c;
    c.clock = run.clock;
    c.has_itl = run.has_itl;
    c.failed = run.failed;
    c.series_kv = run.series_kv;
    c.requests = run.requests;
    c.measured = summarise_served(run);
    c.simulated = ServedSummary{sim.ttft_s, sim.tpot_s, sim.itl_s, sim.e2e_s, sim.output_tokens_per_s, sim.requests_per_s};
    const std::map<std::int64_t, MeasuredSecond> simulated = simulated_seconds(sim_series);
    for (const MeasuredSecond& m : run.series) {
        const auto t = static_cast<std::int64_t>(std::llround(m.t_s));
        const auto it = simulated.find(t);
        c.series.push_back(SeriesPair{m.t_s, m, it == simulated.end() ? MeasuredSecond{m.t_s, 0, 0, 0} : it->second});
    }
    return c;
}

}  // namespace kvplan
