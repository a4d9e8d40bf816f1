// Several engines behind a router (kvplan simulate --replicas N --router
// ...): each replica an independent VllmEngine, or SglangEngine, with its
// own KV pool, every request sent to one of them when it arrives.
//   round-robin   request i to replica i mod N (a closed loop's clients'
//                 requests in the order they are sent);
//   least-loaded  the replica with the fewest outstanding requests (routed
//                 there, arrived and not finished) at the request's arrival,
//                 ties to the lowest index: join-the-shortest-queue, as the
//                 SGLang router's shortest_queue policy routes.
// The engines are advanced in time order, so that a router's decision at
// time t sees every step that started before t, and a closed loop's client
// sends its next request when its last one finishes, on any replica.
#pragma once

#include <cstdint>

#include "core/sim/scheduler.hpp"
#include "core/sim/sglang_scheduler.hpp"

namespace kvplan {

enum class Router { RoundRobin, LeastLoaded };

struct ClusterConfig {
    std::int64_t replicas = 1;  // 1 .. 1024
    Router router = Router::RoundRobin;
};

// The run of every replica merged: requests in workload order, ITL gaps,
// steps, preemptions and recomputed tokens summed, total_blocks the sum of
// the pools, peak_blocks_used the largest replica peak, end_s the last end;
// the per-second series summed (KV usage: blocks in use over all pools);
// `replicas` one line each. With one replica it is simulate()'s run.
// With `stages` (two or more), every replica is a pipeline of that many
// stages (VllmEngine), `price` and `decode` then unused.
SimRun simulate_cluster(const Workload& w, const SchedulerConfig& c, const ClusterConfig& k, const StepPricer& price, const DecodePricer& decode,
                        bool check_invariants = false, const StagePricers& stages = {});

// Second s of every engine's series summed (KV usage: the blocks in use over
// all `blocks`, weighted by each engine's pool, over total_blocks).
std::vector<TimePoint> sum_series(const std::vector<std::vector<TimePoint>>& series, const std::vector<std::int64_t>& blocks,
                                  std::int64_t total_blocks);

// Adds one engine's counters to `run`: ITL gaps, steps, preemptions, token and
// byte counts summed; peak_blocks_used and end_s the larger; total_blocks the sum.
void add_engine_counters(SimRun& run, const SimRun& engine);

// add_engine_counters, then the engine's DP ranks, and its series and pool to
// those sum_series will add up.
void add_engine_totals(SimRun& run, SimRun&& engine, std::vector<std::vector<TimePoint>>& series, std::vector<std::int64_t>& blocks);

// The same with SGLang engines; the "blocks" are token slots.
SimRun simulate_sglang_cluster(const Workload& w, const SglangConfig& c, const ClusterConfig& k, const StepPricer& price,
                               bool check_invariants = false);

}  // namespace kvplan
