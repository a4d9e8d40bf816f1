// One replica served by data-parallel attention with expert parallelism:
// D engine cores (vLLM --data-parallel-size D --enable-expert-parallel) or
// D SGLang schedulers (--tp T --dp D --enable-dp-attention), each with its
// own scheduler and KV pool, whose forward passes run in lockstep, because
// every MoE layer's dispatch and combine needs every rank (docs/simulate.md,
// "Data-parallel attention"). While any rank has work, all of them step
// together: an idle rank runs a dummy batch (vLLM: vllm/v1/engine/core.py,
// DPEngineCoreProc, execute_dummy_batch; SGLang: scheduler.py,
// prepare_mlp_sync_batch, get_idle_batch); the wave's time is the slowest
// rank's (DpStepPricer). When none has work the group waits for the next
// arrival.
//
// Where a request goes (DpRouting):
//   vLLM    the rank with the lowest 4 x waiting + running, ties to the
//           lowest rank (vllm/v1/engine/core_client.py, DPLBAsyncMPClient.
//           get_core_engine_for_request), from counts the coordinator
//           publishes every 100 ms (vllm/v1/engine/coordinator.py,
//           stats_update_interval_ms), each request routed since then
//           adding one to its rank's waiting count;
//   SGLang  round robin, SGLang's default --load-balance-method
//           (python/sglang/srt/managers/data_parallel_controller.py,
//           round_robin_scheduler).
// A request that arrives during a wave reaches its rank when the wave ends.
//
// DpGroupOf has the engines' driving interface (add, advance, next_step_s,
// outstanding_at, done, now, take_totals), so simulate_cluster's router
// can put several replicas, each a DP group, behind it. Its Engine
// (VllmEngine or SglangEngine) steps in lockstep through idle, schedule
// (a StepPlan per rank), commit(plan, dt), idle_step and sync_to.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "core/sim/cluster.hpp"
#include "core/sim/scheduler.hpp"
#include "core/sim/sglang_scheduler.hpp"

namespace kvplan {

// The time of one lockstep forward pass: one batch per DP rank (an empty one
// for a rank with nothing to run); the roofline's dp_mixed_step.
using DpStepPricer = std::function<double(const std::vector<const std::vector<SeqWork>*>&)>;

// How often vLLM's DP coordinator publishes the ranks' queue lengths.
constexpr double kDpStatsInterval_s = 0.1;

enum class DpRouting { VllmBalancer, RoundRobin };

template <class Engine>
class DpGroupOf {
public:
    // `ranks` engines over the requests in `records`, made (one per rank)
    // by make(); 2 to 1024 of them.
    template <class Make>
    DpGroupOf(std::int64_t dp, DpRouting routing, const DpStepPricer& price, const std::vector<RequestRecord>& records, const Make& make)
        : routing_(routing), price_(price), records_(records) {
        check_ranks(dp);
        ranks_.reserve(static_cast<std::size_t>(dp));
        for (std::int64_t i = 0; i < dp; ++i) ranks_.push_back(make());
        counts_.assign(ranks_.size(), {0, 0});
        routed_.assign(ranks_.size(), 0);
        plans_.assign(ranks_.size(), StepPlan{});
        works_.assign(ranks_.size(), nullptr);
    }
    DpGroupOf(DpGroupOf&&) noexcept = default;
    DpGroupOf(const DpGroupOf&) = delete;
    DpGroupOf& operator=(const DpGroupOf&) = delete;
    DpGroupOf& operator=(DpGroupOf&&) = delete;

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
    static void check_ranks(std::int64_t dp);
    bool wave(double horizon);
    void dispatch();
    std::size_t pick_rank(double arrival_s);

    DpRouting routing_;
    const DpStepPricer& price_;
    const std::vector<RequestRecord>& records_;
    std::vector<Engine> ranks_;
    std::deque<std::size_t> inbox_;                    // added, not yet routed to a rank
    std::vector<std::array<std::int64_t, 2>> counts_;  // vLLM: per rank waiting, running, as last published (+ routed since)
    double published_s_ = -1;                          // when counts_ were last refreshed (-1: never)
    std::size_t next_rank_ = 0;                        // round robin's counter
    std::vector<std::int64_t> routed_;
    std::vector<StepPlan> plans_;                     // this wave's, one per rank
    std::vector<const std::vector<SeqWork>*> works_;  // each rank's plan's work, as the pricer takes them
    std::int64_t waves_ = 0;
    double t_ = 0;
};

using DpGroup = DpGroupOf<VllmEngine>;
using SglangDpGroup = DpGroupOf<SglangEngine>;

// vLLM's DP ranks: each an engine core of config `c` (concurrency --dp's
// per engine core); decode-run jumps do not apply. `each_rank(engine, i)`,
// when given, is called on rank i once it is made (disagg.cpp sets each
// decode rank's remote prefill there).
using DpRankSetup = std::function<void(VllmEngine&, std::size_t)>;
DpGroup vllm_dp_group(const Workload& w, const SchedulerConfig& c, std::int64_t dp, const DpStepPricer& price, bool check, RequestStates& states,
                      const DpRankSetup& each_rank = {});

// SGLang's DP attention ranks: each a scheduler of config `c` (one rank's
// token pool and limits).
SglangDpGroup sglang_dp_group(const Workload& w, const SglangConfig& c, std::int64_t dp, const DpStepPricer& price, bool check, SglangStates& states);

// simulate_cluster with every replica a DP group of `dp` ranks of engine `c`.
SimRun simulate_dp_cluster(const Workload& w, const SchedulerConfig& c, std::int64_t dp, const ClusterConfig& k, const DpStepPricer& price,
                           bool check_invariants = false);
SimRun simulate_sglang_dp_cluster(const Workload& w, const SglangConfig& c, std::int64_t dp, const ClusterConfig& k, const DpStepPricer& price,
                                  bool check_invariants = false);

}  // namespace kvplan
