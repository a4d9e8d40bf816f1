// The SLO capacity search of `kvplan recommend --slo` (docs/recommend.md),
// end to end: the target rate of the traffic, every candidate set-up
// (core/plan/slo_candidates.hpp), each searched for its highest rate that
// meets the SLOs on the simulator (core/sim/slo_search.hpp, search_all,
// pruned by cost), the fleet each needs for the target and what it costs,
// and the ranking. The command line parses the flags into the inputs below
// and renders the result (report/slo_report.hpp), which words the rejections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.hpp"
#include "core/model/model_spec.hpp"
#include "core/plan/fleet.hpp"
#include "core/plan/slo_candidates.hpp"
#include "core/plan/slo_result.hpp"
#include "core/sim/slo_search.hpp"
#include "core/sim/sustained.hpp"
#include "core/sim/workload.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

// Requests per simulated run of synthetic traffic: at goodput 0.99 the 1% a
// run may miss is 20 requests, enough that one request more or less moves
// the attainment by 0.05 points, and few enough that a run of Llama-3.1-8B
// on one device takes milliseconds (docs/recommend.md).
inline constexpr std::int64_t kSloDefaultRequests = 2000;
// A trace's runs replay at most 4,000 of its requests, evenly spaced in
// it: twice the synthetic runs, for a trace's lengths vary more than a fixed
// synthetic length; --requests sets it.
inline constexpr std::int64_t kSloDefaultTraceRequests = 4000;
// The window of a trace's target (its busiest minute) and of its replicas over time.
inline constexpr double kRateWindowS = 60;
// --plot and --report: the goodput curves of this many of the best candidates.
inline constexpr std::size_t kSloCurves = 3;

// The step model's uncertainty, for the band of the rate a replica
// sustains: the median error of its batched-throughput predictions out of
// sample (leave one source out), 11.3% (docs/accuracy.md, the
// accuracy-summary table; a test keeps the two equal).
inline constexpr double kStepModelUncertainty = 0.113;
// The band is searched for the best three candidates only (each end is one
// more long-run search); the rest print their nominal rate alone.
inline constexpr std::size_t kBandCandidates = 3;

// The traffic the fleet must serve.
struct SloTraffic {
    Workload workload;               // the synthetic requests, or the trace's as read
    std::string source;              // the trace's path or kSyntheticSource (what refusals name)
    std::optional<double> rate_rps;  // synthetic: the target (--rate); nullopt: a trace, whose peak minute is the target
    std::int64_t max_requests = 0;   // a trace: the most requests one run replays (every k-th kept); 0: all
    // Synthetic traffic's description, for the long runs' fresh draws
    // (core/sim/sustained.hpp); nullopt for a trace, whose long runs tile it.
    std::optional<SyntheticSpec> synthetic;
};

// What the search tries and how it ranks.
struct SloSearchInputs {
    SloSpace space;
    std::vector<Gpu> gpus;                 // the devices tried
    std::map<std::string, double> prices;  // USD per GPU-hour by device id; a device without one is unpriced
    Efficiency efficiency;                 // the engine's speed profile, as the analytic search prices
    SearchTargets targets;
    std::size_t top = 5;          // candidates kept; those that qualify below it are rejected on cost
    bool keep_qualified = false;  // --plot, --report: every qualifying candidate, and the best three's goodput curves
    unsigned threads = 1;         // the simulations run on this many threads (the answer does not depend on it)
    int draws = 3;                // the long runs' independent draws of the traffic; 0: no long runs (the short search alone)
    // The step model's relative uncertainty: the band's ends price every
    // step this much slower and faster (0: no band). Fleets are sized on
    // the slow end unless `optimistic`.
    double step_uncertainty = kStepModelUncertainty;
    bool optimistic = false;
};

// The search. The result holds every figure but the four only the command
// line knows (the workload's label, the served checkpoint, --wide, the wall
// time); `model` must outlive it (base.inputs points to it). Rejections the
// search finds keep their outcome (or cost_rank) and an empty reason: the
// report words them.
SloRecommendResult search_capacity(const ModelSpec& model, SloTraffic traffic, const SloSearchInputs& in);

// Every k-th request, k = ceil(requests / max_requests), so that at most
// `max_requests` remain and the runs keep the whole trace's mix of lengths
// and the shape of its rate over time (the first 4,000 of the Azure
// conversation trace are shorter than the rest). Returns k (1: all kept).
std::size_t thin_requests(Workload& w, std::size_t max_requests);

// The price of one GPU-hour of `gpu`; nullopt when it has none.
std::optional<double> gpu_price(const std::map<std::string, double>& prices, const std::string& gpu);

// Pruning by cost (search_all) compares what one replica of each candidate
// costs: USD per hour (GPUs x the price) when every device is priced, GPUs
// when none is; a mix has no common unit, so nothing is pruned (nullopt).
std::optional<PruneBy> prune_by(const std::vector<const SloCandidate*>& searched, const std::map<std::string, double>& prices, double target_rps,
                                std::size_t keep);

// The kind of rejection an unqualified outcome is: Pruned on cost, Burst a
// simulation that cannot find the rate, the rest missed targets.
Rejection rejection_of(const SearchOutcome& outcome);

// The fleet a candidate that qualified needs for `target_rps`
// (fleet_cost), the replicas of an aggregated one as its DP (separate
// servers), and against a trace's rate per window (`window_rates`, empty
// for synthetic traffic) its replicas over time.
void size_fleet(SloCandidate& c, double target_rps, std::optional<double> usd_per_gpu_hour, double mean_input_tokens, double mean_output_tokens,
                const std::vector<double>& window_rates);

// r.candidates (those that qualified) best first (ranks_before); the best
// aggregated and disaggregated; with `keep_qualified` all of them in
// r.qualified; those past r.top moved to r.rejected, on cost with their
// rank; r.rejected ordered missed targets first, then memory, then the
// rest, cost last (each kind in candidate order).
void rank_candidates(SloRecommendResult& r, bool keep_qualified);

}  // namespace kvplan
