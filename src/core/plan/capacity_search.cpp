// The SLO capacity search (core/plan/capacity_search.hpp). Moved from the
// command line (cli/recommend_search.cpp), which now parses the flags into
// SloTraffic and SloSearchInputs and renders what this returns.
#include "core/plan/capacity_search.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "core/memory/engine.hpp"

namespace kvplan {

namespace {

// The traffic's figures: the target rate, the mean lengths (over the whole
// trace), the rate per window; then the requests a run replays.
std::vector<double> traffic_figures(SloTraffic& t, SloRecommendResult& r) {
    Workload& w = t.workload;
    // The target: the synthetic rate, or the trace's busiest minute (a fleet
    // sized for it also serves the quieter ones).
    r.target_rps = t.rate_rps ? *t.rate_rps : peak_rate_rps(w, kRateWindowS);
    r.target_source = t.rate_rps ? "--rate" : "the trace's peak minute";
    for (const SimRequest& q : w.requests) {
        r.mean_input_tokens += static_cast<double>(q.input_tokens);
        r.mean_output_tokens += static_cast<double>(q.output_tokens);
    }
    r.mean_input_tokens /= static_cast<double>(std::max<std::size_t>(1, w.requests.size()));
    r.mean_output_tokens /= static_cast<double>(std::max<std::size_t>(1, w.requests.size()));
    // Replicas over time: the whole trace's rate minute by minute.
    std::vector<double> window_rates = t.rate_rps ? std::vector<double>{} : window_rates_rps(w, kRateWindowS);
    if (t.max_requests > 0) r.replay_every = thin_requests(w, static_cast<std::size_t>(t.max_requests));
    r.requests_per_run = static_cast<std::int64_t>(w.requests.size());
    return window_rates;
}

// What the search reports about its inputs, before it runs.
SloRecommendResult described(const ModelSpec& model, const SloSearchInputs& in) {
    SloRecommendResult r;
    r.base.model = model.name;
    r.base.inputs.model = &model;
    r.base.inputs.weights = in.space.formats.front().weights;
    r.kv_axis = in.space.kv_dtypes.size() > 1;
    r.weights_axis = in.space.formats.size() > 1;
    r.engine = engine_name(in.space.base.engine);
    r.slo = in.targets.slo;
    r.goodput = in.targets.goodput;
    r.top = in.top;
    r.disaggregated = in.space.disaggregated;
    for (const Gpu& g : in.gpus) r.gpu_ids.push_back(g.id);
    return r;
}

// Each searched candidate's outcome: a qualifying one's fleet, the rest rejected.
void take_outcomes(std::vector<SloSetup>& setups, const std::vector<std::size_t>& searched, const SearchAll& found, const SloSearchInputs& in,
                   const std::vector<double>& window_rates, SloRecommendResult& r) {
    for (std::size_t k = 0; k < searched.size(); ++k) {
        SloCandidate& c = setups[searched[k]].row;
        c.outcome = found.outcomes[k];
        r.simulations += c.outcome.simulations;
        r.simulated_requests += c.outcome.simulated_requests;
        if (!found.errors[k].empty()) reject(c, Rejection::Simulation, found.errors[k]);
        else if (c.outcome.status != SearchOutcome::Status::Found) c.rejection = rejection_of(c.outcome);
        else size_fleet(c, r.target_rps, gpu_price(in.prices, c.gpu), r.mean_input_tokens, r.mean_output_tokens, window_rates);
    }
}

// The goodput curves of the best three, on the search's own workload and engines.
void add_curves(const std::vector<SloSetup>& setups, const RateWorkload& rw, const SloSearchInputs& in, SloRecommendResult& r) {
    std::vector<const SearchEngine*> best;
    std::vector<double> chosen;
    for (std::size_t k = 0; k < r.qualified.size() && k < kSloCurves; ++k) {
        best.push_back(&setups[r.qualified[k].order].engine);
        chosen.push_back(r.qualified[k].outcome.max_rate_rps);
    }
    r.curves = goodput_curves(rw, best, chosen, in.targets, goodput_multiples(), in.threads);
}

// The rate `e` sustains with every step `factor` times as long, confirmed
// on the long runs from `short_rps` / factor down; 0 where none holds.
SearchOutcome rate_with_steps_scaled(const SearchEngine& e, double factor, double short_rps, const LongRuns& l, const SearchTargets& t) {
    SearchOutcome o;
    o.max_rate_rps = short_rps / factor;
    confirm_sustained(o, l, with_step_scale(e, factor), t, {}, kBandTolerance);
    if (o.status != SearchOutcome::Status::Found) o.max_rate_rps = 0;
    return o;
}

// The step model's band for the best kBandCandidates (r.candidates ranked
// best first), both ends on `threads` threads; their fleets re-sized on the
// low end (unless --optimistic), for rank_candidates to rank again.
void add_bands(const std::vector<SloSetup>& setups, const LongRuns& l, const SloSearchInputs& in, const std::vector<double>& window_rates,
               SloRecommendResult& r) {
    const std::size_t shown = std::min({r.top, r.candidates.size(), kBandCandidates});
    std::vector<SloCandidate::StepBand> bands(shown);
    std::vector<SearchOutcome> runs(2 * shown);
    std::vector<std::exception_ptr> failed(2 * shown);
    std::vector<std::size_t> jobs;
    for (std::size_t k = 0; k < 2 * shown; ++k)
        if (r.candidates[k / 2].outcome.sustained.draws > 0) jobs.push_back(k);
    run_in_parallel(jobs, in.threads, [&](std::size_t job) {
        const SloCandidate& c = r.candidates[job / 2];
        const bool slow = job % 2 == 0;
        try {
            runs[job] = rate_with_steps_scaled(setups[c.order].engine, slow ? 1 + in.step_uncertainty : 1 - in.step_uncertainty,
                                               c.outcome.sustained.short_rate_rps, l, in.targets);
            (slow ? bands[job / 2].low_rps : bands[job / 2].high_rps) = runs[job].max_rate_rps;
        } catch (...) {
            failed[job] = std::current_exception();
        }
    });
    for (const std::exception_ptr& f : failed)
        if (f) std::rethrow_exception(f);
    for (const SearchOutcome& o : runs) {
        r.simulations += o.simulations;
        r.simulated_requests += o.simulated_requests;
    }
    for (std::size_t k = 0; k < shown; ++k) {
        SloCandidate& c = r.candidates[k];
        if (c.outcome.sustained.draws == 0) continue;
        bands[k].sized_low = !in.optimistic;
        c.band = bands[k];
        size_fleet(c, r.target_rps, gpu_price(in.prices, c.gpu), r.mean_input_tokens, r.mean_output_tokens, window_rates);
    }
}

}  // namespace

SloRecommendResult search_capacity(const ModelSpec& model, SloTraffic traffic, const SloSearchInputs& in) {
    SloRecommendResult r = described(model, in);
    // The long runs replay the whole trace (or fresh draws), not the thinned one.
    LongRuns long_runs{traffic.synthetic, traffic.synthetic ? Workload{} : traffic.workload, in.draws};
    const std::vector<double> window_rates = traffic_figures(traffic, r);
    std::vector<SloSetup> setups = slo_candidates(in.space, model, in.gpus, traffic.workload, traffic.source, in.efficiency);
    const RateWorkload rw = rate_workload(std::move(traffic.workload));
    std::vector<std::size_t> searched;  // the set-ups that are ready
    std::vector<SearchEngine> engines;
    std::vector<const SloCandidate*> rows;
    for (std::size_t i = 0; i < setups.size(); ++i)
        if (setups[i].ready) {
            searched.push_back(i);
            engines.push_back(setups[i].engine);
            rows.push_back(&setups[i].row);
        }
    // Ranked by cost, candidates that cannot reach the top need no search.
    const std::optional<PruneBy> prune = prune_by(rows, in.prices, r.target_rps, r.top);
    SearchSettings settings;
    if (in.draws > 0) settings.long_runs = &long_runs;
    const SearchAll found = search_all(rw, engines, in.targets, settings, in.threads, prune ? &*prune : nullptr);
    take_outcomes(setups, searched, found, in, window_rates, r);
    r.tried = static_cast<std::int64_t>(setups.size());
    for (SloSetup& s : setups) (s.row.rejected() ? r.rejected : r.candidates).push_back(std::move(s.row));
    // The band of the best (their fleets then sized on its low end) before
    // the ranking that picks the best aggregated and disaggregated plans.
    std::stable_sort(r.candidates.begin(), r.candidates.end(), ranks_before);
    if (in.draws > 0 && in.step_uncertainty > 0) add_bands(setups, long_runs, in, window_rates, r);
    rank_candidates(r, in.keep_qualified);
    if (!r.qualified.empty()) add_curves(setups, rw, in, r);
    return r;
}

std::size_t thin_requests(Workload& w, std::size_t max_requests) {
    if (max_requests == 0 || w.requests.size() <= max_requests) return 1;
    const std::size_t k = (w.requests.size() + max_requests - 1) / max_requests;
    std::vector<SimRequest> kept;
    for (std::size_t i = 0; i < w.requests.size(); i += k) kept.push_back(std::move(w.requests[i]));
    w.requests = std::move(kept);
    return k;
}

std::optional<double> gpu_price(const std::map<std::string, double>& prices, const std::string& gpu) {
    const auto p = prices.find(gpu);
    return p == prices.end() ? std::nullopt : std::optional<double>(p->second);
}

std::optional<PruneBy> prune_by(const std::vector<const SloCandidate*>& searched, const std::map<std::string, double>& prices, double target_rps,
                                std::size_t keep) {
    PruneBy prune{target_rps, {}, keep};
    std::size_t priced = 0;
    for (const SloCandidate* c : searched) {
        const std::optional<double> price = gpu_price(prices, c->gpu);
        priced += price.has_value();
        prune.replica_cost.push_back(static_cast<double>(c->gpus_per_replica()) * price.value_or(1.0));
    }
    if (priced != 0 && priced != searched.size()) return std::nullopt;
    return prune;
}

Rejection rejection_of(const SearchOutcome& outcome) {
    switch (outcome.status) {
        case SearchOutcome::Status::Pruned: return Rejection::Cost;
        case SearchOutcome::Status::Burst: return Rejection::Simulation;
        case SearchOutcome::Status::Unstable: return Rejection::Slo;
        case SearchOutcome::Status::Found: return Rejection::Qualified;
        default: return Rejection::Slo;
    }
}

void size_fleet(SloCandidate& c, double target_rps, std::optional<double> usd_per_gpu_hour, double mean_input_tokens, double mean_output_tokens,
                const std::vector<double>& window_rates) {
    c.fleet = fleet_cost(target_rps, c.sizing_rate_rps(), c.gpus_per_replica(), usd_per_gpu_hour, mean_input_tokens, mean_output_tokens);
    if (!c.pd()) c.serve.dp = c.fleet.replicas;  // a unit's instances are separate servers
    if (!window_rates.empty())
        c.scaled = replicas_over_time(window_rates, kRateWindowS, c.sizing_rate_rps(), c.fleet, c.gpus_per_replica(), usd_per_gpu_hour);
}

void rank_candidates(SloRecommendResult& r, bool keep_qualified) {
    std::stable_sort(r.candidates.begin(), r.candidates.end(), ranks_before);
    if (keep_qualified) r.qualified = r.candidates;
    for (const SloCandidate& c : r.candidates) {
        std::optional<SloCandidate>& best = c.pd() ? r.best_disaggregated : r.best_aggregated;
        if (!best) best = c;
    }
    r.disaggregated_wins = r.best_aggregated && r.best_disaggregated && ranks_before(*r.best_disaggregated, *r.best_aggregated);
    // Those that qualify but rank below --top lose on cost.
    for (std::size_t i = r.top; i < r.candidates.size(); ++i) {
        SloCandidate c = r.candidates[i];
        c.rejection = Rejection::Cost;
        c.cost_rank = i + 1;
        r.rejected.push_back(std::move(c));
    }
    if (r.candidates.size() > r.top) r.candidates.resize(r.top);
    // The rejections that say most first: missed targets, then memory, then the rest; cost last.
    auto rank = [](const SloCandidate& c) {
        return c.rejection == Rejection::Slo ? 0 : c.rejection == Rejection::Memory ? 1 : c.rejection == Rejection::Cost ? 3 : 2;
    };
    std::stable_sort(r.rejected.begin(), r.rejected.end(), [&](const SloCandidate& a, const SloCandidate& b) { return rank(a) < rank(b); });
}

}  // namespace kvplan
