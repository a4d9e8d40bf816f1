// One replica served by data-parallel attention with expert parallelism
// (vLLM --data-parallel-size D --enable-expert-parallel; docs/simulate.md,
// "Data-parallel attention"): D engine cores, each a VllmEngine with its own
// scheduler and KV pool, whose forward passes run in lockstep, because every
// MoE layer's dispatch and combine all-to-all needs every rank. While any
// rank has work, all of them step together (an idle rank runs a dummy batch,
// vllm/v1/engine/core.py, DPEngineCoreProc: execute_dummy_batch); the
// wave's time is the slowest rank's (DpStepPricer). When none has work the
// group waits for the next arrival.
//
// A request goes to the rank with the lowest 4 x waiting + running, ties to
// the lowest rank (vllm/v1/engine/core_client.py, DPLBAsyncMPClient.
// get_core_engine_for_request), from counts the coordinator publishes every
// 100 ms (vllm/v1/engine/coordinator.py, stats_update_interval_ms), each
// request routed since then adding one to its rank's waiting count. A
// request that arrives during a wave reaches its rank when the wave ends.
//
// DpGroup has VllmEngine's driving interface (add, advance, next_step_s,
// outstanding_at, done, now, take_totals), so simulate_cluster's router
// can put several replicas, each a DP group, behind it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "core/sim/cluster.hpp"
#include "core/sim/scheduler.hpp"

namespace kvplan {

// The time of one lockstep forward pass: one batch per DP rank (an empty one
// for a rank with nothing to run); the roofline's dp_mixed_step.
using DpStepPricer = std::function<double(const std::vector<const std::vector<SeqWork>*>&)>;

// How often the DP coordinator publishes the ranks' queue lengths.
constexpr double kDpStatsInterval_s = 0.1;

class DpGroup {
public:
    // `c` is one rank's engine: its pool and limits (concurrency --dp's per
    // engine core). Not with a CPU tier; decode-run jumps do not apply.
    DpGroup(const Workload& w, const SchedulerConfig& c, std::int64_t dp, const DpStepPricer& price, bool check, RequestStates& states);
    DpGroup(DpGroup&&) noexcept = default;
    DpGroup(const DpGroup&) = delete;
    DpGroup& operator=(const DpGroup&) = delete;
    DpGroup& operator=(DpGroup&&) = delete;

    void add(std::size_t r);
    std::optional<double> next_step_s() const;
    void advance(double horizon, bool stop_on_done);
    std::int64_t outstanding_at(double t) const;
    std::int64_t done() const;
    double now() const { return t_; }
    // The ranks' runs merged (as a cluster merges replicas), steps counting
    // waves, dp_ranks one line per rank; requests empty.
    SimRun take_totals();

private:
    bool wave(double horizon);
    void dispatch();
    std::size_t pick_rank(double arrival_s);

    const DpStepPricer& price_;
    const std::vector<RequestRecord>& records_;
    std::vector<VllmEngine> ranks_;
    std::deque<std::size_t> inbox_;                     // added, not yet routed to a rank
    std::vector<std::array<std::int64_t, 2>> counts_;   // per rank: waiting, running, as last published (+ routed since)
    double published_s_ = -1;                           // when counts_ were last refreshed (-1: never)
    std::vector<std::int64_t> routed_;
    std::vector<char> planned_;
    std::vector<const std::vector<SeqWork>*> works_;
    std::int64_t waves_ = 0;
    double t_ = 0;
};

// simulate_cluster with every replica a DP group of `dp` ranks of engine `c`.
SimRun simulate_dp_cluster(const Workload& w, const SchedulerConfig& c, std::int64_t dp, const ClusterConfig& k, const DpStepPricer& price,
                           bool check_invariants = false);

}  // namespace kvplan
