// The SLO capacity search behind `kvplan recommend --slo` (docs/recommend.md):
// for one engine on one replica, the highest request rate at which at least
// `goodput` of the requests meet every SLO given, found by bisection on the
// rate with the simulator, as `vllm bench sweep serve_sla` searches a rate on
// real servers (vllm/benchmarks/sweep/serve_sla.py, solve_sla).
//
// A request meets the SLOs as `vllm bench serve --goodput` counts it
// (vllm/benchmarks/serve.py, calculate_metrics): its TTFT, its TPOT and its
// E2E latency each at most the target, for the targets given. Requests the
// engine rejects, or that never finish, count as missing.
//
// The traffic at rate r is one fixed workload with its arrival times scaled
// by (its own mean rate / r): the same requests in the same order at every
// rate (common random numbers), so that the pass/fail answer moves with the
// rate alone and not with a new draw, and the search is deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/sim/disagg.hpp"
#include "core/sim/dp_group.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"
#include "core/sim/sglang_scheduler.hpp"
#include "core/sim/stability.hpp"
#include "core/sim/workload.hpp"

namespace kvplan {

struct LongRuns;  // sustained.hpp

// A workload that can be replayed at any mean rate.
struct RateWorkload {
    Workload base;             // open loop, arrivals sorted
    double base_rate_rps = 0;  // its own mean rate: (requests - 1) / (last arrival - first arrival)
};

// `base` with its own mean rate; Error(Usage) for fewer than two requests or
// all arriving at once (no rate to scale).
RateWorkload rate_workload(Workload base);
// The workload replayed at mean rate `rate_rps` (arrivals from the first's).
Workload at_rate(const RateWorkload& w, double rate_rps);
// The most requests that arrive within any `window_s` seconds, per second:
// the peak-minute rate with window_s = 60. Arrivals as given.
double peak_rate_rps(const Workload& w, double window_s);

// A disaggregated unit searched as one replica: `pools.prefill_replicas`
// prefill and `pools.decode_replicas` decode instances of vLLM
// (core/sim/disagg.hpp), each side with its own pool and prices: one
// engine's, or a DP attention + EP group's lockstep waves (pricing.dp > 1).
struct DisaggUnit {
    SchedulerConfig prefill, decode;
    DisaggConfig pools;
    PoolPricing prefill_pricing, decode_pricing;
};

// One engine on one replica (or one disaggregated unit), priced step by step.
struct SearchEngine {
    bool sglang = false;
    SchedulerConfig vllm;        // when !sglang and no pd
    SglangConfig sglang_config;  // when sglang
    StepPricer price;
    DecodePricer decode;  // vLLM's decode runs; may be empty
    // vLLM with pipeline parallelism: one pricer per stage (two or more;
    // VllmEngine's batch queue), `price` and `decode` then the whole model's,
    // used for nothing but the bound. Empty: no pipeline.
    StagePricers stages;
    // Data-parallel attention + EP: `dp` engine cores of `vllm` each (or,
    // with `sglang`, `dp` schedulers of `sglang_config` each), stepping in
    // lockstep (dp_group.hpp), every wave priced by `dp_price`; `price` and
    // `decode` then unused. 1: one engine.
    std::int64_t dp = 1;
    DpStepPricer dp_price;
    std::optional<DisaggUnit> pd;  // set: the unit replaces the fields above
};

struct SearchTargets {
    Slo slo;                // at least one target
    double goodput = 0.99;  // the share of requests that must meet every target, in (0, 1]
};

struct SearchSettings {
    double rel_tolerance = 0.01;  // stop when the failing rate is within this of the passing one
    int max_simulations = 40;     // per candidate, a guard against a search that does not close
    // search_all with pruning: engines searched at once between two looks at
    // the bar. Fixed, not the thread count, so that what is pruned is the
    // same on every machine.
    std::size_t wave = 4;
    // search_all: confirm each Found rate on these long runs (search_sustained,
    // sustained.hpp); null: the short search alone.
    const LongRuns* long_runs = nullptr;
};

// Which SLO misses most often at a rate (shares of requests meeting each).
struct Attainment {
    double all = 0, ttft = 1, tpot = 1, e2e = 1;
    std::string binding;  // "ttft", "tpot" or "e2e": the target met by the fewest; "" when all are met by all
};
Attainment attainment(const SimRun& run, const Slo& slo);

// How the long runs of search_sustained (sustained.hpp) confirmed a rate;
// draws == 0 when none ran.
struct LongRunAccount {
    int draws = 0;
    std::int64_t requests_per_run = 0;  // each draw's run
    double run_s = 0;                   // seconds of arrivals per run at the confirmed rate
    double short_rate_rps = 0;          // the short search's answer, before the long runs
    double congested_rps = 0;           // requests finished per second while all wait (stability.hpp)
    bool capped = false;                // the first rate judged was the congested throughput, below the short answer
    // The lowest rate the long runs failed (0: the first rate judged passed)
    // and why: a stability breach, or else the SLO `binding` missed.
    double fail_rate_rps = 0;
    Stability::Breach breach = Stability::Breach::None;
    std::string binding;
    double worst_attainment = 0;  // the lowest share meeting every SLO among the draws at the confirmed rate
};

struct SearchOutcome {
    // Pruned: not searched, because even at its bound the fleet would cost
    // more than the `keep` cheapest found (search_all with PruneBy), or its
    // search stopped at a failing rate whose fleet would (simulations > 0).
    // Burst: the workload still meets the targets at kBurstFactor x the
    // bound, a rate no engine sustains: it is over before a queue builds, too
    // few requests to find the rate (max_rate_rps holds that passing rate).
    // Unstable: the short search found a rate, but on long runs no rate down
    // to a quarter of it held (sustained.hpp).
    enum class Status { Found, SloAlone, NoRate, Pruned, Burst, Unstable } status = Status::Found;
    double bound_rps = 0;      // the analytic upper bound the search starts from
    double max_rate_rps = 0;   // Found: the highest rate that passed
    double fail_rate_rps = 0;  // Found: the lowest rate that failed (within rel_tolerance above)
    SimSummary at_max;         // Found: the run at max_rate_rps (itl_s left empty)
    std::string binding;       // the SLO that bound: at the failing rate (Found) or alone (SloAlone)
    // SloAlone: the lone request's figure for the binding SLO (the nearest
    // target that passes at a vanishing rate) and the target it missed.
    double alone_value_s = 0;
    double target_s = 0;
    std::int64_t simulations = 0;
    std::int64_t simulated_requests = 0;
    LongRunAccount sustained;  // the long runs that confirmed max_rate_rps (search_sustained)
};

// `e` with every step it prices (each engine's, stage's, wave's, and a
// draft model's) taking `factor` times as long: the step model's
// uncertainty band (recommend's "sustains X (A-B)").
SearchEngine with_step_scale(const SearchEngine& e, double factor);

// Runs `job(i)` for every i in `items` on up to `threads` threads; each
// job must write only its own slots.
void run_in_parallel(const std::vector<std::size_t>& items, unsigned threads, const std::function<void(std::size_t)>& job);

// The whole run of `w` on engine `e`, to its last request (no early stop).
SimRun run_search_engine(const Workload& w, const SearchEngine& e);
// Whether the run at `rate_rps` meets the targets, stopping a vLLM run
// early once more requests have missed than the goodput allows (the run
// then stays empty); `simulated` adds the requests that arrived.
struct RateVerdict {
    bool meets = false;
    Attainment attainment;  // when the run completed
    std::string binding;    // the target missed most, when it failed
};
RateVerdict judge_rate(const Workload& at, const SearchEngine& e, const SearchTargets& t, SimRun& run, std::int64_t& simulated);

// How far above the bound a passing workload is a burst, not a rate (search_max_rate).
inline constexpr double kBurstFactor = 4;

// The search for one engine: the lone-request check (the request at the
// goodput quantile of the input lengths for TTFT, of the output lengths for
// E2E and of the total for TPOT, each replayed alone; a miss there is a miss
// at any rate), the analytic bound, then geometric bisection on the rate.
// With `hopeless`, called with each rate that fails: when it returns true
// the search stops there, Status::Pruned with that rate in fail_rate_rps
// (search_all: the candidate cannot rank among the cheapest).
SearchOutcome search_max_rate(const RateWorkload& w, const SearchEngine& e, const SearchTargets& t, const SearchSettings& s = {},
                              const std::function<bool(double)>& hopeless = {});

// The requests per second one engine cannot exceed: each request's output
// tokens take their share of a decode step of `max_num_seqs` sequences (or
// of as many requests of the mean length as the pool holds, if fewer) at the
// mean context, and its prompt tokens at least the marginal price of a
// prefill token (a full chunk's price less a one-token step's, per token).
// Mixed steps share the weight reads, which are counted once, in the decode.
// A disaggregated unit: the lower of its prefill instances' rate (prompt
// tokens only) and its decode instances' (output tokens only). A pipeline of
// P stages: one batch of max_num_seqs / P sequences (and 1/P of the pool)
// leaves its slowest stage per that stage's step, P batches in flight. A DP
// group: DP batches of up to max_num_seqs each (as each rank's pool holds)
// in one wave, DP prompts' chunks prefilled in one.
double rate_upper_bound(const RateWorkload& w, const SearchEngine& e);

// Ranking by cost lets most candidates go unsearched: a candidate's fleet
// needs at least ceil(target / bound) replicas, so one whose cheapest
// possible fleet costs more than the `keep` cheapest fleets found (or the
// same, with less capacity at its bound than theirs: replicas x rate) cannot
// rank among them.
struct PruneBy {
    double target_rps = 0;
    std::vector<double> replica_cost;  // per engine: what one replica costs (USD per hour, or GPUs)
    std::size_t keep = 0;              // 0: search every engine
};

// search_max_rate for every engine, on `threads` threads; results in engine
// order whatever the threads' timing. With `prune`, engines are searched in
// waves of `s.wave`, cheapest possible fleet first, and the pruning rule
// looks only at waves already finished, so what is pruned does not depend
// on timing either. An engine whose simulation throws has its message in
// `errors` at its index (empty otherwise) and a NoRate outcome.
struct SearchAll {
    std::vector<SearchOutcome> outcomes;
    std::vector<std::string> errors;
};
SearchAll search_all(const RateWorkload& w, const std::vector<SearchEngine>& engines, const SearchTargets& t, const SearchSettings& s,
                     unsigned threads, const PruneBy* prune = nullptr);

// The chart behind `recommend --slo --plot` (goodput.svg): one searched
// engine replayed at multiples of the rate the search chose, each run to
// the end (no early stop: the throughput of a failing rate is what it
// shows), with the figures of `vllm bench serve`: completed requests over
// the duration (first arrival to last finish, metrics.hpp) as throughput,
// the requests meeting every SLO over the same duration as goodput, and
// their share of all requests (Attainment::all, what the search compares
// with the goodput target).
struct GoodputPoint {
    double multiple = 0;     // of the chosen rate
    double offered_rps = 0;  // the replay's mean arrival rate (at_rate)
    double throughput_rps = 0;
    double goodput_rps = 0;
    double goodput_share = 0;
};
struct GoodputCurve {
    double chosen_rps = 0;
    std::vector<GoodputPoint> points;  // by multiple, ascending
    // The highest offered rate whose goodput share still meets the target
    // (an index into points); none when no multiple meets it.
    std::optional<std::size_t> knee;
};
// 0.25 to 2 times the chosen rate in steps of 0.125: 15 rates, the chosen
// one among them, half of them within a factor of 1.5 of it.
std::vector<double> goodput_multiples();
// One curve per engine at `chosen_rps[i]`, the runs spread over `threads`
// threads; results in engine order whatever the threads' timing.
std::vector<GoodputCurve> goodput_curves(const RateWorkload& w, const std::vector<const SearchEngine*>& engines,
                                         const std::vector<double>& chosen_rps, const SearchTargets& t, const std::vector<double>& multiples,
                                         unsigned threads);

// A trace's arrivals in consecutive windows of `window_s` seconds from its
// first arrival (the last window may be partial), each as a rate: requests
// in the window / window_s. Empty for an empty workload.
std::vector<double> window_rates_rps(const Workload& w, double window_s);

}  // namespace kvplan
