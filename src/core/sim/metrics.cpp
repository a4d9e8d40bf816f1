#include "core/sim/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kvplan {

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(rank));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

Distribution distribution(std::vector<double> v) {
    Distribution d;
    d.count = static_cast<std::int64_t>(v.size());
    if (v.empty()) return d;
    d.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    d.p50 = percentile(v, 50);
    d.p90 = percentile(v, 90);
    d.p99 = percentile(v, 99);
    d.max = v.back();
    return d;
}

namespace {

bool meets(const RequestRecord& r, const Slo& slo) {
    const double ttft = r.first_token_s - r.arrival_s;
    const double e2e = r.finish_s - r.arrival_s;
    const double tpot = r.output_tokens > 1 ? (e2e - ttft) / static_cast<double>(r.output_tokens - 1) : 0;
    return (!slo.ttft_s || ttft <= *slo.ttft_s) && (!slo.tpot_s || tpot <= *slo.tpot_s) && (!slo.e2e_s || e2e <= *slo.e2e_s);
}

}  // namespace

SimSummary summarise(const SimRun& run, const Slo& slo) {
    SimSummary s;
    s.requests = static_cast<std::int64_t>(run.requests.size());
    std::vector<double> ttft, tpot, e2e, queue;
    double first_arrival = run.requests.empty() ? 0 : run.requests.front().arrival_s, last_finish = 0;
    std::int64_t input = 0, output = 0, good = 0;
    for (const RequestRecord& r : run.requests) {
        first_arrival = std::min(first_arrival, r.arrival_s);
        if (r.rejected || r.finish_s < 0) {
            s.rejected += r.rejected ? 1 : 0;
            continue;
        }
        s.completed += 1;
        last_finish = std::max(last_finish, r.finish_s);
        ttft.push_back(r.first_token_s - r.arrival_s);
        e2e.push_back(r.finish_s - r.arrival_s);
        queue.push_back(r.scheduled_s - r.arrival_s);
        if (r.output_tokens > 1) tpot.push_back((r.finish_s - r.first_token_s) / static_cast<double>(r.output_tokens - 1));
        input += r.input_tokens;
        output += r.output_tokens;
        if (slo.any() && meets(r, slo)) ++good;
    }
    s.duration_s = std::max(0.0, last_finish - first_arrival);
    s.ttft_s = distribution(std::move(ttft));
    s.tpot_s = distribution(std::move(tpot));
    s.itl_s = distribution(run.itl_s);
    s.e2e_s = distribution(std::move(e2e));
    s.queue_s = distribution(std::move(queue));
    if (s.duration_s > 0) {
        s.input_tokens_per_s = static_cast<double>(input) / s.duration_s;
        s.output_tokens_per_s = static_cast<double>(output) / s.duration_s;
        s.requests_per_s = static_cast<double>(s.completed) / s.duration_s;
    }
    s.preemptions = run.preemptions;
    s.recomputed_tokens = run.recomputed_tokens;
    s.steps = run.steps;
    s.prefix_cache_hit_rate = run.prompt_tokens > 0 ? static_cast<double>(run.prefix_hit_tokens) / static_cast<double>(run.prompt_tokens) : 0;
    s.kv_blocks_total = run.total_blocks;
    s.kv_peak_usage = run.total_blocks > 0 ? static_cast<double>(run.peak_blocks_used) / static_cast<double>(run.total_blocks) : 0;
    if (slo.any()) {
        s.goodput_requests_per_s = s.duration_s > 0 ? static_cast<double>(good) / s.duration_s : 0;
        s.slo_attainment = s.requests > 0 ? static_cast<double>(good) / static_cast<double>(s.requests) : 0;
    }
    return s;
}

}  // namespace kvplan
