// Whether a run at a fixed arrival rate reached a steady state, the test the
// SLO search (slo_search.hpp) puts before the SLO test. A queue that grows
// for the whole run can still meet a latency target over a short run and
// miss it for good over a long one: a rate is sustainable only if the system
// is stable at it (queueing theory: utilisation below 1, the arrival rate
// below the throughput the server keeps while congested).
//
// The test reads only the requests' records (arrival, first token, finish,
// preemptions), so it applies to every engine the simulator runs. Its rules
// (docs/recommend.md, "Stability"):
// - the first kWarmupShare of the arrival span is warm-up and is left out;
//   the rest, the window, is cut into four quarters by arrival time;
// - completions keep up with arrivals: over the window, requests finished
//   >= requests arrived x (1 - 1/sqrt(n)), n the window's arrivals (the
//   Poisson noise of a count of n);
// - no upward trend of the queue: the median wait to be first scheduled
//   (Vidur's scheduling delay) of the last quarter's requests is at most
//   the 90th percentile of the first quarter's plus the first quarter's
//   median TTFT (in a steady state both quarters sample one distribution,
//   so a median above the other's 90th percentile by more than a request's
//   own service time is a shift, not noise; a wait, unlike a count of
//   requests, does not rise with a trace's own busier minutes);
// - no upward trend of the TTFT, by the same rule on the TTFTs;
// - no preemption storm: more than 1/sqrt(n) of the window's requests
//   preempted, and more of them in the last quarter than in the first.
#pragma once

#include <cstdint>

#include "core/sim/scheduler.hpp"

namespace kvplan {

inline constexpr double kWarmupShare = 0.2;

struct Stability {
    // The first rule the run breaks, in the order above (the report words it).
    enum class Breach { None, Completions, Queue, Ttft, Preemption } breach = Breach::None;
    bool stable() const { return breach == Breach::None; }
    std::int64_t window_arrivals = 0;
    std::int64_t window_completions = 0;
    double wait_first_p90_s = 0, wait_last_median_s = 0;  // arrival to first scheduled
    double ttft_first_p90_s = 0, ttft_last_median_s = 0;
    double preempted_share = 0;  // of the window's requests
};

// `run` holds every request's record (a run simulated to its end), in
// arrival order. A run of fewer than 40 requests in its window (ten a
// quarter) is too short to judge: stable, with window_arrivals saying so.
Stability judge_stability(const SimRun& run);

// The throughput the server keeps while congested: requests finished per
// second between the 20th and the 80th percentile of the finish times of a
// run whose requests all arrive at once (the queue never empties in that
// span). 0 when fewer than ten requests finished.
double congested_throughput_rps(const SimRun& run);

}  // namespace kvplan
