#include "core/sim/stability.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace kvplan {

namespace {

// The value at quantile q of `v` (nearest rank, as metrics.cpp's
// percentiles); v is sorted in place. 0 for an empty v.
double quantile(std::vector<double>& v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double rank = std::ceil(q * static_cast<double>(v.size())) - 1;
    return v[static_cast<std::size_t>(std::clamp(rank, 0.0, static_cast<double>(v.size() - 1)))];
}

bool finished(const RequestRecord& r) {
    return !r.rejected && r.finish_s >= 0;
}

// A request that never got its first token waited for ever: it sorts last.
double ttft_of(const RequestRecord& r) {
    return r.first_token_s >= 0 ? r.first_token_s - r.arrival_s : std::numeric_limits<double>::infinity();
}

}  // namespace

Stability judge_stability(const SimRun& run) {
    Stability s;
    std::vector<std::size_t> order(run.requests.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return run.requests[a].arrival_s < run.requests[b].arrival_s; });
    if (order.size() < 2) return s;
    const double first = run.requests[order.front()].arrival_s, last = run.requests[order.back()].arrival_s;
    const double start = first + kWarmupShare * (last - first), quarter = (last - start) / 4;

    // Finish times, sorted: the requests that left by any instant.
    std::vector<double> finishes;
    for (const RequestRecord& r : run.requests)
        if (finished(r)) finishes.push_back(r.finish_s);
    std::sort(finishes.begin(), finishes.end());
    const auto left_by = [&](double t) { return static_cast<double>(std::upper_bound(finishes.begin(), finishes.end(), t) - finishes.begin()); };

    std::vector<double> wait_first, wait_last, ttft_first, ttft_last;
    std::int64_t preempted = 0, preempted_first = 0, preempted_last = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const RequestRecord& r = run.requests[order[k]];
        if (r.arrival_s < start) continue;
        ++s.window_arrivals;
        const double waited = r.scheduled_s >= 0 ? r.scheduled_s - r.arrival_s : std::numeric_limits<double>::infinity();
        const bool in_first = r.arrival_s < start + quarter, in_last = r.arrival_s >= last - quarter;
        preempted += r.preemptions > 0;
        if (in_first) {
            wait_first.push_back(waited);
            ttft_first.push_back(ttft_of(r));
            preempted_first += r.preemptions > 0;
        }
        if (in_last) {
            wait_last.push_back(waited);
            ttft_last.push_back(ttft_of(r));
            preempted_last += r.preemptions > 0;
        }
    }
    if (s.window_arrivals < 40 || wait_first.empty() || wait_last.empty()) return s;
    s.window_completions = static_cast<std::int64_t>(left_by(last) - left_by(std::nextafter(start, -INFINITY)));
    s.wait_first_p90_s = quantile(wait_first, 0.9);
    s.wait_last_median_s = quantile(wait_last, 0.5);
    const double ttft_first_median = quantile(ttft_first, 0.5);
    s.ttft_first_p90_s = quantile(ttft_first, 0.9);
    s.ttft_last_median_s = quantile(ttft_last, 0.5);
    const double n = static_cast<double>(s.window_arrivals);
    s.preempted_share = static_cast<double>(preempted) / n;

    const double noise = 1 / std::sqrt(n);
    using B = Stability::Breach;
    if (static_cast<double>(s.window_completions) < n * (1 - noise)) s.breach = B::Completions;
    // The slack of both trends: the first quarter's median TTFT, the time
    // scale of a request's own service (a rise by less is not a queue).
    else if (s.wait_last_median_s > s.wait_first_p90_s + ttft_first_median) s.breach = B::Queue;
    else if (s.ttft_last_median_s > s.ttft_first_p90_s + ttft_first_median) s.breach = B::Ttft;
    else if (s.preempted_share > noise && preempted_last > preempted_first) s.breach = B::Preemption;
    return s;
}

double congested_throughput_rps(const SimRun& run) {
    std::vector<double> finishes;
    for (const RequestRecord& r : run.requests)
        if (finished(r)) finishes.push_back(r.finish_s);
    if (finishes.size() < 10) return 0;
    std::sort(finishes.begin(), finishes.end());
    const auto at = [&](double q) { return static_cast<std::size_t>(std::floor(q * static_cast<double>(finishes.size() - 1))); };
    const std::size_t a = at(0.2), b = at(0.8);
    const double span = finishes[b] - finishes[a];
    return span > 0 ? static_cast<double>(b - a) / span : 0;
}

}  // namespace kvplan
