#include "core/sim/metrics.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <numeric>

#include "core/checked_conversion.hpp"

namespace kvplan {

namespace {

// The p-th percentile of sorted `v`, interpolated between ranks as numpy's
// default (and vLLM's benchmark) does.
double sorted_percentile(const std::vector<double>& v, double p) {
    const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(checked_trunc(std::floor(rank), "a percentile rank"));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

// Sorts (gap, count) runs by gap. A run's gaps are positive doubles, whose
// bit patterns order as their values, so an LSD radix sort on those bits
// (8 passes of one byte, a pass skipped when every key shares its byte, as
// the exponent bytes mostly do) gives the order std::sort gives, up to
// the order of equal gaps, which are merged anyway. It is most of
// summarise's time otherwise (a run per step: 300,000 on a day's trace).
void sort_by_gap(std::vector<std::pair<double, std::int64_t>>& runs) {
    for (const auto& [g, n] : runs)
        if (!(g > 0) || !std::isfinite(g)) {
            std::sort(runs.begin(), runs.end());
            return;
        }
    std::vector<std::pair<double, std::int64_t>> other(runs.size());
    for (int shift = 0; shift < 64; shift += 8) {
        std::size_t count[257] = {};
        for (const auto& run : runs) ++count[((std::bit_cast<std::uint64_t>(run.first) >> shift) & 0xff) + 1];
        if (std::find(std::begin(count) + 1, std::end(count), runs.size()) != std::end(count)) continue;  // one byte value: order kept
        for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
        for (const auto& run : runs) other[count[(std::bit_cast<std::uint64_t>(run.first) >> shift) & 0xff]++] = run;
        runs.swap(other);
    }
}

}  // namespace

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return sorted_percentile(v, p);
}

Distribution distribution(std::vector<double> v) {
    Distribution d;
    d.count = static_cast<std::int64_t>(v.size());
    if (v.empty()) return d;
    d.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    std::sort(v.begin(), v.end());
    d.p50 = sorted_percentile(v, 50);
    d.p90 = sorted_percentile(v, 90);
    d.p99 = sorted_percentile(v, 99);
    d.max = v.back();
    return d;
}

Distribution distribution(const GapCounts& gaps) {
    Distribution d;
    d.count = gaps.size();
    if (gaps.empty()) return d;
    std::vector<std::pair<double, std::int64_t>> runs = gaps.runs();
    sort_by_gap(runs);
    // Merge equal gaps, then cumulative counts: ends[i] = rank one past run i's last element.
    std::vector<double> value;
    std::vector<std::int64_t> ends;
    std::int64_t total = 0;
    for (const auto& [g, n] : runs) {
        total += n;
        if (!value.empty() && value.back() == g) ends.back() = total;
        else {
            value.push_back(g);
            ends.push_back(total);
        }
    }
    double sum = 0;
    for (std::size_t i = 0; i < value.size(); ++i) sum += value[i] * static_cast<double>(ends[i] - (i > 0 ? ends[i - 1] : 0));
    d.mean = sum / static_cast<double>(total);
    // The element at rank i of the expanded sorted list.
    const auto at = [&](std::int64_t i) { return value[static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), i) - ends.begin())]; };
    // As percentile() above, with v[i] read through at(i).
    const auto pct = [&](double p) {
        const double rank = p / 100.0 * static_cast<double>(total - 1);
        const std::int64_t lo = checked_trunc(std::floor(rank), "a percentile rank");
        const std::int64_t hi = std::min(lo + 1, total - 1);
        return at(lo) + (at(hi) - at(lo)) * (rank - static_cast<double>(lo));
    };
    d.p50 = pct(50);
    d.p90 = pct(90);
    d.p99 = pct(99);
    d.max = value.back();
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

SimSummary summarise(const SimRun& run, const Slo& slo, bool with_itl) {
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
    if (with_itl) s.itl_s = distribution(run.itl_s);
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
    const auto share = [&](std::int64_t tokens) {
        return run.prompt_tokens > 0 ? static_cast<double>(tokens) / static_cast<double>(run.prompt_tokens) : 0.0;
    };
    s.prefix_cache_hit_rate_gpu = share(run.prefix_hit_tokens - run.cpu_hit_tokens);
    if (run.cpu_blocks > 0) s.prefix_cache_hit_rate_cpu = share(run.cpu_hit_tokens);
    s.offload_bytes = run.offload_bytes;
    s.onload_bytes = run.onload_bytes;
    s.kv_blocks_total = run.total_blocks;
    s.kv_peak_usage = run.total_blocks > 0 ? static_cast<double>(run.peak_blocks_used) / static_cast<double>(run.total_blocks) : 0;
    if (!run.replicas.empty()) {
        // Replicas: the fullest one's peak share (pools add up, peaks need not coincide).
        s.replicas = static_cast<std::int64_t>(run.replicas.size());
        s.kv_peak_usage = 0;
        for (const ReplicaStats& r : run.replicas)
            if (r.total_blocks > 0)
                s.kv_peak_usage = std::max(s.kv_peak_usage, static_cast<double>(r.peak_blocks_used) / static_cast<double>(r.total_blocks));
    }
    if (!run.dp_ranks.empty()) {
        // DP ranks: each its own pool, as replicas.
        s.kv_peak_usage = 0;
        for (const ReplicaStats& r : run.dp_ranks)
            if (r.total_blocks > 0)
                s.kv_peak_usage = std::max(s.kv_peak_usage, static_cast<double>(r.peak_blocks_used) / static_cast<double>(r.total_blocks));
    }
    if (slo.any()) {
        s.goodput_requests_per_s = s.duration_s > 0 ? static_cast<double>(good) / s.duration_s : 0;
        s.slo_attainment = s.requests > 0 ? static_cast<double>(good) / static_cast<double>(s.requests) : 0;
    }
    return s;
}

}  // namespace kvplan
