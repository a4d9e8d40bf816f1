// The rate one replica sustains, confirmed on long runs (docs/recommend.md,
// "A rate that holds"). The bisection of search_max_rate (slo_search.hpp)
// judges a rate on one short run of 2,000 requests; over a longer run a
// rate it passes can tip into a queue that never recovers (a KV pool that
// fills starts recompute preemptions, which cut the throughput below the
// arrival rate). So, per candidate:
// 1. the congested throughput: the requests finished per second while every
//    request of one draw waits at once (stability.hpp); no rate above it is
//    reported, for no queue is stable above it;
// 2. the short search's rate, capped there, judged on `draws` independent
//    draws of the traffic, each run long: at least kLongRunRequests requests
//    and kLongRunS seconds of arrivals (at most kLongRunMaxRequests); a rate
//    passes only if every draw is stable (judge_stability) and meets the
//    SLOs, and the mean share meeting them passes at 99% confidence
//    (attainment_lower_bound, over batches of the draws);
// 3. if it fails, lower by steps of kLongRunStep until a rate passes, then
//    bisect to kLongRunTolerance.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/sim/slo_search.hpp"
#include "core/sim/stability.hpp"
#include "core/sim/synthetic.hpp"

namespace kvplan {

inline constexpr std::int64_t kLongRunRequests = 10000;
inline constexpr double kLongRunS = 600;
inline constexpr std::int64_t kLongRunMaxRequests = 30000;
inline constexpr double kLongRunStep = 0.9;
inline constexpr double kLongRunTolerance = 0.02;
inline constexpr double kBandTolerance = 0.05;

// What the long runs replay: fresh draws of synthetic traffic (seeds
// seed, seed + 1, ...), or a trace, tiled to length and started at a
// different point for each draw (draw k at k / draws of its requests).
struct LongRuns {
    std::optional<SyntheticSpec> synthetic;
    Workload trace;  // when no synthetic spec: the whole trace, arrivals sorted
    int draws = 3;
};

// The one-sided 99% lower confidence bound of the long-run share of
// requests meeting the SLOs, from k batch shares: each draw's requests cut
// into kBatchesPerRun consecutive batches (batch means within independent
// replications, Law & Kelton, "Simulation Modeling and Analysis", ch. 9):
// mean - t(0.99, k - 1) x sd / sqrt(k). A share of a run is not a binomial
// count: requests miss together, in the bursts that build a queue, so
// 10,000 requests of one run can hold 0.5% or 5% of misses at the same
// rate; the spread of the batches measures that. 99%, as the goodput
// target is itself a 99th-percentile promise (by default). One share: itself.
inline constexpr std::size_t kBatchesPerRun = 4;
double attainment_lower_bound(const std::vector<double>& shares);

// Draw k of `n` requests, at its own mean rate (to be scaled by at_rate).
RateWorkload long_draw(const LongRuns& l, int k, std::int64_t n);
// The requests a long run at `rate_rps` replays: kLongRunS of arrivals, at
// least kLongRunRequests, at most kLongRunMaxRequests.
std::int64_t long_run_requests(double rate_rps);

// search_max_rate, then the long runs above on its Found answer: the
// outcome's max_rate_rps becomes the confirmed rate (Status::Unstable when
// no rate down to a quarter of the short search's passes), and its
// `sustained` figures say how it was found.
// The long runs on a Found outcome of search_max_rate: max_rate_rps
// becomes the confirmed rate, or the status Unstable (no rate down to a
// quarter of it holds) or Pruned (a rate failed that `hopeless` says cannot
// rank). search_all runs it on the candidates that can still rank.
// `tolerance`: the bisection's end (kLongRunTolerance; the step model's
// band, an uncertainty itself, stops at kBandTolerance).
void confirm_sustained(SearchOutcome& out, const LongRuns& l, const SearchEngine& e, const SearchTargets& t,
                       const std::function<bool(double)>& hopeless = {}, double tolerance = kLongRunTolerance);
SearchOutcome search_sustained(const RateWorkload& w, const LongRuns& l, const SearchEngine& e, const SearchTargets& t, const SearchSettings& s,
                               const std::function<bool(double)>& hopeless = {});

}  // namespace kvplan
