#include "core/sim/dp_group.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace kvplan {

namespace {

// A rank's own pricers are never called: the group prices every wave.
const StepPricer& group_priced() {
    static const StepPricer p = [](const std::vector<SeqWork>&) -> double { throw std::logic_error("a DP rank priced its own step"); };
    return p;
}
const DecodePricer& no_decode_runs() {
    static const DecodePricer p;
    return p;
}

}  // namespace

template <class Engine>
void DpGroupOf<Engine>::check_ranks(std::int64_t dp) {
    if (dp < 2 || dp > 1024) usage_error("--dp " + std::to_string(dp) + ": a DP group takes 2 to 1024 ranks");
}

DpGroup vllm_dp_group(const Workload& w, const SchedulerConfig& c, std::int64_t dp, const DpStepPricer& price, bool check, RequestStates& states,
                      const DpRankSetup& each_rank) {
    SchedulerConfig rank = c;
    rank.jump_decode_runs = false;  // every wave is priced over all ranks
    std::size_t made = 0;
    return DpGroup(dp, DpRouting::VllmBalancer, price, states.records, [&] {
        VllmEngine e(w, rank, group_priced(), no_decode_runs(), check, states);
        if (each_rank) each_rank(e, made);
        ++made;
        return e;
    });
}

SglangDpGroup sglang_dp_group(const Workload& w, const SglangConfig& c, std::int64_t dp, const DpStepPricer& price, bool check,
                              SglangStates& states) {
    return SglangDpGroup(dp, DpRouting::RoundRobin, price, states.records, [&] { return SglangEngine(w, c, group_priced(), check, states); });
}

template <class Engine>
void DpGroupOf<Engine>::add(std::size_t r) {
    inbox_.push_back(r);
}

template <class Engine>
std::int64_t DpGroupOf<Engine>::done() const {
    std::int64_t n = 0;
    for (const Engine& e : ranks_) n += e.done();
    return n;
}

// vLLM's internal load balancer: the published counts, refreshed every
// kDpStatsInterval_s, plus one waiting request for each routed since.
// SGLang's controller: round robin.
template <class Engine>
std::size_t DpGroupOf<Engine>::pick_rank(double arrival_s) {
    if (routing_ == DpRouting::RoundRobin) {
        const std::size_t rank = next_rank_;
        next_rank_ = (next_rank_ + 1) % ranks_.size();
        return rank;
    }
    if (published_s_ < 0 || arrival_s >= published_s_ + kDpStatsInterval_s) {
        for (std::size_t i = 0; i < ranks_.size(); ++i) counts_[i] = {ranks_[i].waiting_count(), ranks_[i].running_count()};
        published_s_ = std::floor(arrival_s / kDpStatsInterval_s) * kDpStatsInterval_s;
    }
    std::size_t best = 0;
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
        const std::int64_t score = counts_[i][0] * 4 + counts_[i][1];
        if (score < least) {
            least = score;
            best = i;
        }
    }
    counts_[best][0] += 1;
    return best;
}

// The requests that arrived by now go to their ranks, in arrival order.
template <class Engine>
void DpGroupOf<Engine>::dispatch() {
    while (!inbox_.empty() && records_[inbox_.front()].arrival_s <= t_) {
        const std::size_t r = inbox_.front();
        inbox_.pop_front();
        const std::size_t rank = pick_rank(records_[r].arrival_s);
        ++routed_[rank];
        ranks_[rank].add(r);
    }
}

// The earliest of the ranks' next steps (now, for a rank with work; the end
// of its load, for one whose queue waits on the CPU tier) and the next arrival.
template <class Engine>
std::optional<double> DpGroupOf<Engine>::next_step_s() const {
    std::optional<double> next;
    for (const Engine& e : ranks_)
        if (const std::optional<double> s = e.next_step_s()) next = next ? std::min(*next, *s) : *s;
    if (!inbox_.empty()) next = std::min(next.value_or(std::numeric_limits<double>::infinity()), records_[inbox_.front()].arrival_s);
    if (next) next = std::max(t_, *next);
    return next;
}

// One wave (every rank's step at once), or the jump to the next arrival
// when no rank has work; false when neither starts before `horizon`.
template <class Engine>
bool DpGroupOf<Engine>::wave(double horizon) {
    dispatch();
    const bool work = std::any_of(ranks_.begin(), ranks_.end(), [](const Engine& e) { return !e.idle(); });
    if (!work) {
        if (inbox_.empty()) return false;
        const double next = records_[inbox_.front()].arrival_s;
        if (next >= horizon) return false;
        t_ = std::max(t_, next);
        for (Engine& e : ranks_) e.sync_to(t_);
        return true;
    }
    if (t_ >= horizon) return false;
    bool any = false;
    double draft_s = 0;
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
        plans_[i] = ranks_[i].schedule();  // empty: an idle rank, whose dummy batch is empty work
        any = any || !plans_[i].empty();
        works_[i] = &plans_[i].work;
        draft_s = std::max(draft_s, plans_[i].draft_s);
    }
    if (!any) {
        // Only rejections this pass (the ranks' state moved: try again), or
        // every rank with work waits for a KV load from host memory: the
        // group idles to the first load's end or the next arrival, where
        // vLLM's ranks would spin on dummy batches (docs/simulate.md).
        const std::optional<double> next = next_step_s();
        if (next && *next > t_) {
            if (*next >= horizon) return false;
            t_ = *next;
            for (Engine& e : ranks_) e.sync_to(t_);
        }
        return true;
    }
    const double dt = price_(works_) + draft_s;
    if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a wave priced at a non-positive time");
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
        if (!plans_[i].empty()) ranks_[i].commit(plans_[i], dt);
        else ranks_[i].idle_step(dt);
    }
    t_ += dt;
    ++waves_;
    return true;
}

template <class Engine>
void DpGroupOf<Engine>::advance(double horizon, bool stop_on_done) {
    for (;;) {
        const std::int64_t done_before = done();
        if (!wave(horizon)) return;
        if (stop_on_done && done() != done_before) return;
    }
}

template <class Engine>
std::int64_t DpGroupOf<Engine>::outstanding_at(double t) const {
    std::int64_t n = 0;
    for (const Engine& e : ranks_) n += e.outstanding_at(t);
    for (std::size_t r : inbox_)
        if (records_[r].arrival_s <= t) ++n;
    return n;
}

template <class Engine>
SimRun DpGroupOf<Engine>::take_totals() {
    SimRun run;
    std::vector<std::vector<TimePoint>> series;
    std::vector<std::int64_t> blocks;
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
        SimRun e = ranks_[i].take_totals();
        run.dp_ranks.push_back(ReplicaStats{routed_[i], e.steps, e.preemptions, e.peak_blocks_used, e.total_blocks});
        add_engine_totals(run, std::move(e), series, blocks);
    }
    run.timeseries = sum_series(series, blocks, run.total_blocks);
    run.steps = waves_;  // the group's forward passes, not the ranks' steps summed
    run.end_s = std::max(run.end_s, t_);
    return run;
}

template class DpGroupOf<VllmEngine>;
template class DpGroupOf<SglangEngine>;

}  // namespace kvplan
