#include "core/sim/cluster.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "core/sim/dp_group.hpp"

namespace kvplan {

// Second s of every replica's series into second s of the sum (a replica
// whose series ended earlier has nothing running, its blocks free). Walks the
// points, not the seconds: each output point spans the seconds until the next
// replica's point changes, so an idle stretch costs one point per replica.
void add_engine_counters(SimRun& run, const SimRun& e) {
    run.itl_s.append(e.itl_s);
    run.steps += e.steps;
    run.decode_run_steps += e.decode_run_steps;
    run.preemptions += e.preemptions;
    run.recomputed_tokens += e.recomputed_tokens;
    run.prompt_tokens += e.prompt_tokens;
    run.prefix_hit_tokens += e.prefix_hit_tokens;
    run.cpu_blocks += e.cpu_blocks;
    run.cpu_hit_tokens += e.cpu_hit_tokens;
    run.offload_bytes += e.offload_bytes;
    run.onload_bytes += e.onload_bytes;
    run.spec_verifies += e.spec_verifies;
    run.spec_drafts += e.spec_drafts;
    run.spec_accepted += e.spec_accepted;
    run.spec_kept_tokens += e.spec_kept_tokens;
    run.peak_blocks_used = std::max(run.peak_blocks_used, e.peak_blocks_used);
    run.total_blocks += e.total_blocks;
    run.end_s = std::max(run.end_s, e.end_s);
}

void add_engine_totals(SimRun& run, SimRun&& e, std::vector<std::vector<TimePoint>>& series, std::vector<std::int64_t>& blocks) {
    add_engine_counters(run, e);
    run.dp_ranks.insert(run.dp_ranks.end(), e.dp_ranks.begin(), e.dp_ranks.end());
    series.push_back(std::move(e.timeseries));
    blocks.push_back(e.total_blocks);
}

std::vector<TimePoint> sum_series(const std::vector<std::vector<TimePoint>>& series, const std::vector<std::int64_t>& blocks,
                                  std::int64_t total_blocks) {
    std::vector<TimePoint> out;
    std::vector<std::size_t> at(series.size(), 0);     // the point each replica is in
    std::vector<std::int64_t> into(series.size(), 0);  // seconds of it already summed
    double t = 1;
    for (const auto& s : series)
        if (!s.empty()) t = s.front().t_s;
    for (;;) {
        std::int64_t span = std::numeric_limits<std::int64_t>::max();
        for (std::size_t i = 0; i < series.size(); ++i)
            if (at[i] < series[i].size()) span = std::min(span, series[i][at[i]].seconds - into[i]);
        if (span == std::numeric_limits<std::int64_t>::max()) break;
        TimePoint p;
        p.t_s = t;
        for (std::size_t i = 0; i < series.size(); ++i) {
            if (at[i] >= series[i].size()) continue;
            const TimePoint& q = series[i][at[i]];
            p.running += q.running;
            p.waiting += q.waiting;
            p.kv_cache_usage += q.kv_cache_usage * static_cast<double>(blocks[i]);  // blocks in use, divided below
            p.prompt_tokens_per_s += q.prompt_tokens_per_s;
            p.generation_tokens_per_s += q.generation_tokens_per_s;
            if ((into[i] += span) == q.seconds) ++at[i], into[i] = 0;
        }
        p.kv_cache_usage /= static_cast<double>(total_blocks);
        p.seconds = span;  // every second of the span logs this same sum
        if (!out.empty() && out.back().same_line(p)) out.back().seconds += span;
        else out.push_back(p);
        t += static_cast<double>(span);
    }
    return out;
}

namespace {

constexpr double kForever = std::numeric_limits<double>::infinity();

// Engine: VllmEngine or SglangEngine (the same interface); States: the
// requests' state they share (RequestStates or SglangStates).
template <class Engine, class States>
class Cluster {
public:
    // make(states) builds one replica.
    template <class Make>
    Cluster(const Workload& w, const ClusterConfig& k, States states, const Make& make)
        : w_(w), k_(k), states_(std::move(states)), routed_(static_cast<std::size_t>(k.replicas), 0) {
        engines_.reserve(static_cast<std::size_t>(k.replicas));
        for (std::int64_t i = 0; i < k.replicas; ++i) engines_.push_back(make(states_));
    }

    SimRun run() {
        if (w_.concurrency > 0) closed_loop();
        else open_loop();
        return merge();
    }

private:
    // Sends request r, arriving at t, to a replica.
    void route(std::size_t r, double t) {
        std::size_t best = r % engines_.size();
        if (k_.router == Router::LeastLoaded) {
            std::int64_t least = std::numeric_limits<std::int64_t>::max();
            for (std::size_t e = 0; e < engines_.size(); ++e) {
                const std::int64_t n = engines_[e].outstanding_at(t);
                if (n < least) {
                    least = n;
                    best = e;
                }
            }
        }
        ++routed_[best];
        engines_[best].add(r);
    }

    void open_loop() {
        if (k_.router == Router::RoundRobin) {
            // The routing does not depend on the engines: each runs alone.
            for (std::size_t i = 0; i < w_.requests.size(); ++i) route(i, w_.requests[i].arrival_s);
        } else {
            for (std::size_t i = 0; i < w_.requests.size(); ++i) {
                const double t = w_.requests[i].arrival_s;
                for (Engine& e : engines_) e.advance(t, false);  // every step that starts before t
                route(i, t);
            }
        }
        for (Engine& e : engines_) e.advance(kForever, false);
    }

    std::int64_t done() const {
        std::int64_t n = 0;
        for (const Engine& e : engines_) n += e.done();
        return n;
    }

    // Closed loop: `concurrency` clients, each sending its next request the
    // moment its last one finishes (or is rejected), through the router.
    void closed_loop() {
        std::size_t released = 0;
        const auto release = [&](double t) {
            while (released < w_.requests.size() && static_cast<std::int64_t>(released) - done() < w_.concurrency) {
                states_.records[released].arrival_s = t;
                route(released++, t);
            }
        };
        release(0);
        for (;;) {
            // The replica whose next step starts first; it may run up to the
            // next replica's time, before which no other can finish anything
            // (a finish ends a step that starts at or after that time).
            std::size_t first = engines_.size();
            double first_t = kForever, second_t = kForever;
            for (std::size_t e = 0; e < engines_.size(); ++e) {
                const std::optional<double> t = engines_[e].next_step_s();
                if (!t) continue;
                if (*t < first_t) {
                    second_t = first_t;
                    first_t = *t;
                    first = e;
                } else if (*t < second_t) {
                    second_t = *t;
                }
            }
            if (first == engines_.size()) break;
            // At least its next step, even when another replica is at the same time.
            const double horizon = std::max(second_t, std::nextafter(first_t, kForever));
            engines_[first].advance(horizon, true);
            release(engines_[first].now());
        }
    }

    SimRun merge() {
        SimRun run;
        std::vector<std::vector<TimePoint>> series;
        std::vector<std::int64_t> blocks;
        for (std::size_t i = 0; i < engines_.size(); ++i) {
            SimRun e = engines_[i].take_totals();
            run.replicas.push_back(ReplicaStats{routed_[i], e.steps, e.preemptions, e.peak_blocks_used, e.total_blocks});
            if (engines_.size() == 1) {
                e.requests = std::move(states_.records);
                e.replicas = std::move(run.replicas);
                return e;
            }
            add_engine_totals(run, std::move(e), series, blocks);
        }
        run.timeseries = sum_series(series, blocks, run.total_blocks);
        run.requests = std::move(states_.records);
        return run;
    }

    const Workload& w_;
    ClusterConfig k_;
    States states_;
    std::vector<Engine> engines_;
    std::vector<std::int64_t> routed_;
};

// SGLang's engines serve or reject every request; one left over is a bug.
SimRun served(SimRun run) {
    for (const RequestRecord& r : run.requests)
        if (!r.rejected && r.finish_s < 0) throw std::logic_error("sglang: requests left unserved");
    return run;
}

void check_cluster(const Workload& w, const ClusterConfig& k) {
    if (k.replicas < 1 || k.replicas > 1024) usage_error("--replicas " + std::to_string(k.replicas) + ": expected 1 to 1024");
    check_arrivals(w);
}

}  // namespace

SimRun simulate_cluster(const Workload& w, const SchedulerConfig& c, const ClusterConfig& k, const StepPricer& price, const DecodePricer& decode,
                        bool check_invariants, const StagePricers& stages) {
    check_scheduler_config(c);
    check_cluster(w, k);
    if (stages.size() == 1) usage_error("simulate: a pipeline needs two or more stages");
    Cluster<VllmEngine, RequestStates> cluster(
        w, k, request_states(w), [&](RequestStates& states) { return VllmEngine(w, c, price, decode, check_invariants, states, stages); });
    return cluster.run();
}

SimRun simulate_sglang_cluster(const Workload& w, const SglangConfig& c, const ClusterConfig& k, const StepPricer& price, bool check_invariants) {
    check_sglang_config(c);
    check_cluster(w, k);
    Cluster<SglangEngine, SglangStates> cluster(w, k, sglang_states(w),
                                                [&](SglangStates& states) { return SglangEngine(w, c, price, check_invariants, states); });
    return served(cluster.run());
}

SimRun simulate_dp_cluster(const Workload& w, const SchedulerConfig& c, std::int64_t dp, const ClusterConfig& k, const DpStepPricer& price,
                           bool check_invariants) {
    check_scheduler_config(c);
    check_cluster(w, k);
    Cluster<DpGroup, RequestStates> cluster(w, k, request_states(w),
                                            [&](RequestStates& states) { return vllm_dp_group(w, c, dp, price, check_invariants, states); });
    return cluster.run();
}

SimRun simulate_sglang_dp_cluster(const Workload& w, const SglangConfig& c, std::int64_t dp, const ClusterConfig& k, const DpStepPricer& price,
                                  bool check_invariants) {
    check_sglang_config(c);
    check_cluster(w, k);
    Cluster<SglangDpGroup, SglangStates> cluster(w, k, sglang_states(w),
                                                 [&](SglangStates& states) { return sglang_dp_group(w, c, dp, price, check_invariants, states); });
    return served(cluster.run());
}

}  // namespace kvplan
