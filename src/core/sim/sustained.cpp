#include "core/sim/sustained.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace kvplan {

std::int64_t long_run_requests(double rate_rps) {
    const double n = std::max(static_cast<double>(kLongRunRequests), std::ceil(kLongRunS * rate_rps));
    return static_cast<std::int64_t>(std::min(n, static_cast<double>(kLongRunMaxRequests)));
}

namespace {

// `trace` repeated end to end, n requests from request `offset` on: each
// repetition starts one mean gap after the last one's last arrival, so the
// arrivals stay sorted and the rate and burstiness are the trace's.
Workload tiled(const Workload& trace, std::size_t offset, std::int64_t n) {
    const std::vector<SimRequest>& q = trace.requests;
    const std::size_t m = q.size();
    const double span = q.back().arrival_s - q.front().arrival_s;
    const double period = span + span / static_cast<double>(m - 1);
    Workload out;
    out.requests.reserve(static_cast<std::size_t>(n));
    for (std::int64_t t = 0; t < n; ++t) {
        const std::size_t at = offset + static_cast<std::size_t>(t);
        SimRequest r = q[at % m];
        r.arrival_s = r.arrival_s + static_cast<double>(at / m) * period - q[offset].arrival_s;
        out.requests.push_back(std::move(r));
    }
    return out;
}

// Every request of `d` waiting at once: the throughput the engine keeps congested.
double congested(const RateWorkload& d, const SearchEngine& e, SearchOutcome& out) {
    Workload all = d.base;
    for (SimRequest& r : all.requests) r.arrival_s = 0;
    ++out.simulations;
    out.simulated_requests += static_cast<std::int64_t>(all.requests.size());
    return congested_throughput_rps(run_search_engine(all, e));
}

}  // namespace

double attainment_lower_bound(const std::vector<double>& shares) {
    const std::size_t k = shares.size();
    if (k < 2) return k == 1 ? shares.front() : 0;
    double mean = 0;
    for (double a : shares) mean += a;
    mean /= static_cast<double>(k);
    double ss = 0;
    for (double a : shares) ss += (a - mean) * (a - mean);
    const double sd = std::sqrt(ss / static_cast<double>(k - 1));
    // Student's t, one-sided 99%, k - 1 degrees of freedom (past 20, 20's: a little wider).
    static constexpr double t99[] = {0,     31.821, 6.965, 4.541, 3.747, 3.365, 3.143, 2.998, 2.896, 2.821, 2.764,
                                     2.718, 2.681,  2.650, 2.624, 2.602, 2.583, 2.567, 2.552, 2.539, 2.528};
    return mean - t99[std::min<std::size_t>(k - 1, 20)] * sd / std::sqrt(static_cast<double>(k));
}

namespace {

// The share meeting every SLO in each of kBatchesPerRun consecutive
// batches of a run's requests (in arrival order): the batch means whose
// spread measures how much a run's misses cluster.
std::vector<double> batch_shares(const SimRun& run, const Slo& slo) {
    std::vector<double> out;
    const std::size_t n = run.requests.size();
    for (std::size_t b = 0; b < kBatchesPerRun; ++b) {
        SimRun part;
        part.requests.assign(run.requests.begin() + static_cast<std::ptrdiff_t>(n * b / kBatchesPerRun),
                             run.requests.begin() + static_cast<std::ptrdiff_t>(n * (b + 1) / kBatchesPerRun));
        if (!part.requests.empty()) out.push_back(attainment(part, slo).all);
    }
    return out;
}

struct LongVerdict {
    bool pass = true;
    Stability::Breach breach = Stability::Breach::None;
    std::string binding;
    double worst = 1;
    SimSummary summary;  // draw 0's, when it passed
};

// A rate passes when every draw's run is stable and meets the targets; the
// first draw that fails ends the judgement.
LongVerdict judge_long(const std::vector<RateWorkload>& draws, double rate, const SearchEngine& e, const SearchTargets& t, SearchOutcome& out) {
    LongVerdict v;
    std::vector<double> shares;
    std::string binding;
    for (std::size_t k = 0; k < draws.size(); ++k) {
        SimRun run;
        ++out.simulations;
        const RateVerdict r = judge_rate(at_rate(draws[k], rate), e, t, run, out.simulated_requests);
        const bool completed = !run.requests.empty();
        const Stability s = completed ? judge_stability(run) : Stability{};
        if (!s.stable() || !r.meets) {
            v.pass = false;
            v.breach = s.breach;
            v.binding = s.stable() ? r.binding : "";
            return v;
        }
        v.worst = std::min(v.worst, r.attainment.all);
        for (double b : batch_shares(run, t.slo)) shares.push_back(b);
        if (k == 0) v.summary = summarise(run, t.slo, false);
        binding = r.binding;
    }
    // Every draw passed; the mean over their batches must pass too with 99% confidence.
    if (attainment_lower_bound(shares) < t.goodput) {
        v.pass = false;
        v.binding = (binding.empty() ? std::string("the SLO") : binding) + ", at 99% confidence across the draws";
    }
    return v;
}

}  // namespace

RateWorkload long_draw(const LongRuns& l, int k, std::int64_t n) {
    if (l.draws < 1 || k < 0 || k >= l.draws || n < 2) usage_error("a long run needs at least one draw of two requests");
    if (l.synthetic) {
        SyntheticSpec s = *l.synthetic;
        s.requests = n;
        s.seed = l.synthetic->seed + static_cast<std::uint64_t>(k);  // unsigned: wraps, by definition
        return rate_workload(synthetic_workload(s));
    }
    const std::size_t m = l.trace.requests.size();
    if (m < 2) usage_error("the long runs need a trace of at least two requests");
    return rate_workload(tiled(l.trace, m * static_cast<std::size_t>(k) / static_cast<std::size_t>(l.draws), n));
}

SearchOutcome search_sustained(const RateWorkload& w, const LongRuns& l, const SearchEngine& e, const SearchTargets& t, const SearchSettings& s,
                               const std::function<bool(double)>& hopeless) {
    SearchOutcome out = search_max_rate(w, e, t, s, hopeless);
    if (out.status == SearchOutcome::Status::Found) confirm_sustained(out, l, e, t, hopeless);
    return out;
}

void confirm_sustained(SearchOutcome& out, const LongRuns& l, const SearchEngine& e, const SearchTargets& t,
                       const std::function<bool(double)>& hopeless, double tolerance) {
    LongRunAccount& a = out.sustained;
    a.draws = l.draws;
    a.short_rate_rps = out.max_rate_rps;
    a.congested_rps = congested(long_draw(l, 0, kLongRunRequests), e, out);
    double top = out.max_rate_rps;
    if (a.congested_rps > 0 && a.congested_rps < top) {
        top = a.congested_rps;
        a.capped = true;
    }
    a.requests_per_run = long_run_requests(top);
    std::vector<RateWorkload> draws;
    for (int k = 0; k < l.draws; ++k) draws.push_back(long_draw(l, k, a.requests_per_run));

    double lo = 0, hi = top;
    LongVerdict at_lo;
    // A failing rate bounds the answer from above: once it cannot rank (the
    // pruning rule of search_all), neither can the answer.
    const auto failed = [&](double rate, const LongVerdict& v) {
        hi = rate;
        a.fail_rate_rps = rate;
        a.breach = v.breach;
        a.binding = v.binding;
        return hopeless && hopeless(rate);
    };
    for (double r = top; lo == 0; r *= kLongRunStep) {
        if (r < top / 4) {
            out.status = SearchOutcome::Status::Unstable;
            out.fail_rate_rps = hi;
            out.max_rate_rps = 0;
            return;
        }
        LongVerdict v = judge_long(draws, r, e, t, out);
        if (v.pass) {
            lo = r;
            at_lo = std::move(v);
        } else if (failed(r, v)) {
            out.status = SearchOutcome::Status::Pruned;
            out.fail_rate_rps = r;
            return;
        }
    }
    while (hi > lo * (1 + tolerance)) {
        const double mid = std::sqrt(lo * hi);
        LongVerdict v = judge_long(draws, mid, e, t, out);
        if (v.pass) {
            lo = mid;
            at_lo = std::move(v);
        } else if (failed(mid, v)) {
            out.status = SearchOutcome::Status::Pruned;
            out.fail_rate_rps = mid;
            return;
        }
    }
    out.max_rate_rps = lo;
    if (a.fail_rate_rps > 0) out.fail_rate_rps = a.fail_rate_rps;
    out.at_max = at_lo.summary;
    a.worst_attainment = at_lo.worst;
    a.run_s = static_cast<double>(a.requests_per_run - 1) / lo;
}

}  // namespace kvplan
