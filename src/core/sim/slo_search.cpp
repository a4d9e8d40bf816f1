#include "core/sim/slo_search.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <numeric>
#include <thread>

#include "core/checked.hpp"
#include "core/checked_conversion.hpp"
#include "core/error.hpp"
#include "core/sim/sustained.hpp"

namespace kvplan {

RateWorkload rate_workload(Workload base) {
    if (base.concurrency > 0) usage_error("the SLO search replays open-loop traffic: arrivals, not a closed loop of clients");
    if (base.requests.size() < 2) usage_error("the SLO search needs at least two requests to scale their arrival rate");
    const double span = base.requests.back().arrival_s - base.requests.front().arrival_s;
    if (!(span > 0)) usage_error("the SLO search needs requests that do not all arrive at once");
    RateWorkload w;
    w.base_rate_rps = static_cast<double>(base.requests.size() - 1) / span;
    w.base = std::move(base);
    return w;
}

Workload at_rate(const RateWorkload& w, double rate_rps) {
    Workload out = w.base;
    const double first = w.base.requests.front().arrival_s, stretch = w.base_rate_rps / rate_rps;
    for (SimRequest& r : out.requests) r.arrival_s = first + (r.arrival_s - first) * stretch;
    return out;
}

double peak_rate_rps(const Workload& w, double window_s) {
    std::size_t best = 0, lo = 0;
    for (std::size_t hi = 0; hi < w.requests.size(); ++hi) {
        while (w.requests[hi].arrival_s - w.requests[lo].arrival_s >= window_s) ++lo;
        best = std::max(best, hi - lo + 1);
    }
    return static_cast<double>(best) / window_s;
}

Attainment attainment(const SimRun& run, const Slo& slo) {
    std::int64_t all = 0, ttft = 0, tpot = 0, e2e = 0;
    for (const RequestRecord& r : run.requests) {
        if (r.rejected || r.finish_s < 0) continue;
        // The figures of vllm/benchmarks/serve.py (and metrics.cpp): TPOT over the tokens after the first.
        const double first = r.first_token_s - r.arrival_s, total = r.finish_s - r.arrival_s;
        const double per_token = r.output_tokens > 1 ? (total - first) / static_cast<double>(r.output_tokens - 1) : 0;
        const bool a = !slo.ttft_s || first <= *slo.ttft_s, b = !slo.tpot_s || per_token <= *slo.tpot_s, c = !slo.e2e_s || total <= *slo.e2e_s;
        ttft += a;
        tpot += b;
        e2e += c;
        all += a && b && c;
    }
    const double n = static_cast<double>(std::max<std::size_t>(1, run.requests.size()));
    Attainment out{static_cast<double>(all) / n, static_cast<double>(ttft) / n, static_cast<double>(tpot) / n, static_cast<double>(e2e) / n, ""};
    // The target met by the fewest requests binds; ties in the order ttft, tpot, e2e.
    double least = 1;
    for (const auto& [name, share] : {std::pair<const char*, double>{"ttft", out.ttft}, {"tpot", out.tpot}, {"e2e", out.e2e}})
        if (share < least) {
            least = share;
            out.binding = name;
        }
    return out;
}

SimRun run_search_engine(const Workload& w, const SearchEngine& e) {
    if (e.pd) return simulate_disagg(w, e.pd->prefill, e.pd->decode, e.pd->pools, e.pd->prefill_pricing, e.pd->decode_pricing).run;
    if (e.sglang && e.dp > 1) return simulate_sglang_dp_cluster(w, e.sglang_config, e.dp, ClusterConfig{}, e.dp_price);
    if (e.sglang) return simulate_sglang(w, e.sglang_config, e.price);
    if (e.dp > 1) return simulate_dp_cluster(w, e.vllm, e.dp, ClusterConfig{}, e.dp_price);
    return simulate(w, e.vllm, e.price, e.decode, false, e.stages);
}

namespace {

// Which targets request r has already missed at time `now` (bits: 1 TTFT,
// 2 TPOT, 4 E2E). Finished: by its figures; unfinished: when it has waited
// past the TTFT target for its first token or past the E2E target for its
// last (an unfinished request's TPOT is not known yet).
int missed_by(const RequestRecord& r, const Slo& slo, double now) {
    if (r.rejected) return 7;
    if (r.finish_s >= 0) {
        const double first = r.first_token_s - r.arrival_s, total = r.finish_s - r.arrival_s;
        const double per_token = r.output_tokens > 1 ? (total - first) / static_cast<double>(r.output_tokens - 1) : 0;
        return (slo.ttft_s && first > *slo.ttft_s ? 1 : 0) | (slo.tpot_s && per_token > *slo.tpot_s ? 2 : 0) |
               (slo.e2e_s && total > *slo.e2e_s ? 4 : 0);
    }
    if (r.arrival_s > now) return 0;
    return (slo.ttft_s && r.first_token_s < 0 && now - r.arrival_s > *slo.ttft_s ? 1 : 0) | (slo.e2e_s && now - r.arrival_s > *slo.e2e_s ? 4 : 0);
}

// One vLLM engine over `w`, as simulate() drives it (every request added,
// then advanced), but looked at every 1/32 of the arrival span: once more
// requests have missed than the goodput allows, the rate fails whatever the
// rest does, and the run stops there. Advancing to a horizon and on runs
// the same steps as advancing in one go, so a run that completes is
// simulate()'s. Returns nullopt when it completed (the run in `out`), else
// the target missed by the most requests so far; `arrived` counts the
// requests that had arrived when it stopped.
// Engine: a VllmEngine, or a DpGroup of them.
template <class Engine>
std::optional<std::string> stopped_early(const Workload& w, Engine& engine, RequestStates& states, const SearchTargets& t, SimRun& out,
                                         std::int64_t& arrived) {
    for (std::size_t i = 0; i < w.requests.size(); ++i) engine.add(i);
    const double n = static_cast<double>(w.requests.size());
    const std::int64_t allowed = checked_trunc(std::floor((1 - t.goodput) * n + 1e-9), "the requests allowed to miss");
    const double first = w.requests.front().arrival_s, span = w.requests.back().arrival_s - first;
    for (int k = 1; k < 32 && engine.next_step_s(); ++k) {
        engine.advance(first + span * k / 32, false);
        std::int64_t missed = 0, by[3] = {0, 0, 0};
        arrived = 0;
        for (const RequestRecord& r : states.records) {
            const int m = missed_by(r, t.slo, engine.now());
            missed += m != 0;
            for (int j = 0; j < 3; ++j) by[j] += (m >> j) & 1;
            arrived += r.arrival_s <= engine.now();
        }
        if (missed > allowed) {
            const int most = static_cast<int>(std::max_element(by, by + 3) - by);
            return std::string(most == 0 ? "ttft" : most == 1 ? "tpot" : "e2e");
        }
    }
    engine.advance(std::numeric_limits<double>::infinity(), false);
    out = engine.take_totals();
    out.requests = std::move(states.records);
    arrived = static_cast<std::int64_t>(w.requests.size());
    return std::nullopt;
}

std::optional<std::string> vllm_stopped_early(const Workload& w, const SearchEngine& e, const SearchTargets& t, SimRun& out, std::int64_t& arrived) {
    check_scheduler_config(e.vllm);
    check_arrivals(w);
    RequestStates states = request_states(w);
    if (e.dp > 1) {
        DpGroup group = vllm_dp_group(w, e.vllm, e.dp, e.dp_price, false, states);
        return stopped_early(w, group, states, t, out, arrived);
    }
    if (e.stages.size() == 1) usage_error("the SLO search: a pipeline needs two or more stages");
    VllmEngine engine(w, e.vllm, e.price, e.decode, false, states, e.stages);
    return stopped_early(w, engine, states, t, out, arrived);
}

// The request at the `q` quantile of `key` (the smallest one that at least q
// of the requests are no larger than), replayed alone.
template <class Key>
SimRun alone_at_quantile(const Workload& w, const SearchEngine& e, double q, Key key) {
    std::vector<std::size_t> order(w.requests.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(w.requests[a]) < key(w.requests[b]); });
    const double n = static_cast<double>(order.size());
    const auto k = static_cast<std::size_t>(checked_trunc(std::clamp(std::ceil(q * n) - 1, 0.0, n - 1), "a quantile's rank"));
    Workload one;
    one.requests.push_back(w.requests[order[k]]);
    one.requests.back().arrival_s = 0;
    return run_search_engine(one, e);
}

// Alone, a request is as fast as it will ever be (nothing shares its steps
// or queues ahead of it), so if the request at the goodput quantile misses a
// target alone, more than 1 - goodput of them miss it at any rate.
bool misses_alone(const RateWorkload& w, const SearchEngine& e, const SearchTargets& t, SearchOutcome& out) {
    struct Check {
        const std::optional<double>& target;
        const char* name;
        std::int64_t (*key)(const SimRequest&);
        double (*value)(const RequestRecord&);
    };
    static constexpr auto ttft = [](const RequestRecord& r) { return r.first_token_s - r.arrival_s; };
    static constexpr auto e2e = [](const RequestRecord& r) { return r.finish_s - r.arrival_s; };
    const Check checks[] = {
        {t.slo.ttft_s, "ttft", [](const SimRequest& r) { return r.input_tokens; }, ttft},
        {t.slo.tpot_s, "tpot", [](const SimRequest& r) { return r.input_tokens + r.output_tokens; },
         [](const RequestRecord& r) { return r.output_tokens > 1 ? (e2e(r) - ttft(r)) / static_cast<double>(r.output_tokens - 1) : 0.0; }},
        {t.slo.e2e_s, "e2e", [](const SimRequest& r) { return r.output_tokens; }, e2e},
    };
    for (const Check& c : checks) {
        if (!c.target) continue;
        const SimRun run = alone_at_quantile(w.base, e, t.goodput, c.key);
        ++out.simulations;
        ++out.simulated_requests;
        const RequestRecord& r = run.requests.front();
        const bool finished = !r.rejected && r.finish_s >= 0;
        if (!finished || c.value(r) > *c.target) {
            out.status = SearchOutcome::Status::SloAlone;
            out.binding = c.name;
            out.alone_value_s = finished ? c.value(r) : INFINITY;
            out.target_s = *c.target;
            return true;
        }
    }
    return false;
}

}  // namespace

namespace {

// Seconds of engine time a request of the mean lengths takes at least: its
// prompt tokens at the marginal price of a token in a full chunk of `chunk`
// (what one more token adds to the step; the weight reads and the step
// overhead left out, since decodes share them), and its output tokens their
// share of a decode step of `seqs` sequences, or of as many requests of the
// mean length as `pool_tokens` holds, if fewer, at the mean context.
struct RequestFloor {
    double prefill_s = 0, decode_s = 0;
};
RequestFloor request_floor(double in, double outs, std::int64_t pool_tokens, std::int64_t seqs, std::int64_t chunk, const StepPricer& price,
                           const DecodePricer& decode) {
    // Clamped before the cast: a double past 2^63 does not convert.
    const std::int64_t fit = checked_trunc(std::min(static_cast<double>(pool_tokens) / std::max(1.0, in + outs), 1e15), "the requests that fit");
    const std::int64_t batch = std::max<std::int64_t>(1, std::min(seqs, fit));
    const std::int64_t context = checked_trunc(std::round(in + outs / 2), "a mean context");
    std::optional<double> step = decode ? decode(batch, batch * context) : std::nullopt;
    if (!step) step = price(std::vector<SeqWork>(static_cast<std::size_t>(batch), SeqWork{context, 1}));
    chunk = std::max<std::int64_t>(2, chunk);
    const double per_prompt_token = std::max(0.0, (price({SeqWork{0, chunk}}) - price({SeqWork{0, 1}})) / static_cast<double>(chunk - 1));
    return {in * per_prompt_token, outs * *step / static_cast<double>(batch)};
}

RequestFloor vllm_floor(double in, double outs, const SchedulerConfig& c, const StepPricer& price, const DecodePricer& decode) {
    return request_floor(in, outs, checked_mul(c.num_gpu_blocks, c.block_size, "KV pool tokens"), c.max_num_seqs, c.max_num_batched_tokens, price,
                         decode);
}

// A pipeline of P stages keeps P batches in flight, the running requests
// (at most max_num_seqs, as the pool holds) shared among them, and sends one
// out of its slowest stage per that stage's step: a request's floor is its
// share of the slowest stage's step for one batch of max_num_seqs / P (and
// 1/P of the pool), with the prompt tokens at that stage's marginal price.
RequestFloor pipeline_floor(double in, double outs, const SchedulerConfig& c, const StagePricers& stages) {
    const auto p = static_cast<std::int64_t>(stages.size());
    const StepPricer slowest = [&stages](const std::vector<SeqWork>& seqs) {
        double worst = 0;
        for (const StepPricer& stage : stages) worst = std::max(worst, stage(seqs));
        return worst;
    };
    return request_floor(in, outs, checked_mul(c.num_gpu_blocks, c.block_size, "KV pool tokens") / p, (c.max_num_seqs + p - 1) / p,
                         c.max_num_batched_tokens, slowest, DecodePricer{});
}

// A DP group of D ranks: a wave of D decode batches, each of `seqs`
// sequences or as many requests of the mean length as a rank's pool of
// `pool_tokens` holds, at the mean context; D prompts' chunks of `chunk`
// prefilled in one wave, each token at the wave's marginal price over the
// D x chunk tokens.
RequestFloor dp_floor(double in, double outs, std::int64_t pool_tokens, std::int64_t seqs, std::int64_t chunk_tokens, std::int64_t dp,
                      const DpStepPricer& price) {
    const std::int64_t fit = checked_trunc(std::min(static_cast<double>(pool_tokens) / std::max(1.0, in + outs), 1e15), "the requests that fit");
    const std::int64_t rank = std::max<std::int64_t>(1, std::min(seqs, fit));
    const std::int64_t context = checked_trunc(std::round(in + outs / 2), "a mean context");
    const auto wave = [&](const std::vector<SeqWork>& batch) {
        return price(std::vector<const std::vector<SeqWork>*>(static_cast<std::size_t>(dp), &batch));
    };
    const double step = wave(std::vector<SeqWork>(static_cast<std::size_t>(rank), SeqWork{context, 1}));
    const std::int64_t chunk = std::max<std::int64_t>(2, chunk_tokens);
    const double per_prompt_token = std::max(0.0, (wave({SeqWork{0, chunk}}) - wave({SeqWork{0, 1}})) / static_cast<double>(dp * (chunk - 1)));
    return {in * per_prompt_token, outs * step / static_cast<double>(rank * dp)};
}

// One side of a disaggregated unit: one engine, or a DP group's waves.
RequestFloor pool_floor(double in, double outs, const SchedulerConfig& c, const PoolPricing& p) {
    if (p.dp > 1)
        return dp_floor(in, outs, checked_mul(c.num_gpu_blocks, c.block_size, "KV pool tokens"), c.max_num_seqs, c.max_num_batched_tokens, p.dp,
                        p.wave);
    return vllm_floor(in, outs, c, p.step, p.decode);
}

// A step that costs nothing bounds nothing: a million requests a second stands for no bound.
double finite_bound(double rps) {
    return std::isfinite(rps) && rps > 0 ? std::min(rps, 1e6) : 1e6;
}

}  // namespace

double rate_upper_bound(const RateWorkload& w, const SearchEngine& e) {
    double in = 0, outs = 0;
    for (const SimRequest& r : w.base.requests) {
        in += static_cast<double>(r.input_tokens);
        outs += static_cast<double>(r.output_tokens);
    }
    const double n = static_cast<double>(w.base.requests.size());
    in /= n;
    outs /= n;
    if (e.pd) {
        // Each side alone: the prefill instances take every prompt, the decode instances every output token.
        const RequestFloor p = pool_floor(in, 1, e.pd->prefill, e.pd->prefill_pricing);
        const RequestFloor d = pool_floor(in, outs, e.pd->decode, e.pd->decode_pricing);
        return std::min(finite_bound(static_cast<double>(e.pd->pools.prefill_replicas) / p.prefill_s),
                        finite_bound(static_cast<double>(e.pd->pools.decode_replicas) / d.decode_s));
    }
    RequestFloor f;
    if (e.sglang) {
        const std::int64_t pool = e.sglang_config.max_total_tokens;
        const std::int64_t seqs =
            e.sglang_config.max_running_requests > 0
                ? e.sglang_config.max_running_requests
                : sglang_default_max_running_requests(pool, e.sglang_config.context_len > 0 ? e.sglang_config.context_len : pool);
        f = e.dp > 1 ? dp_floor(in, outs, pool, seqs, e.sglang_config.chunked_prefill_size, e.dp, e.dp_price)
                     : request_floor(in, outs, pool, seqs, e.sglang_config.chunked_prefill_size, e.price, e.decode);
    } else if (e.dp > 1) {
        f = dp_floor(in, outs, checked_mul(e.vllm.num_gpu_blocks, e.vllm.block_size, "KV pool tokens"), e.vllm.max_num_seqs,
                     e.vllm.max_num_batched_tokens, e.dp, e.dp_price);
    } else if (!e.stages.empty()) {
        f = pipeline_floor(in, outs, e.vllm, e.stages);
    } else {
        f = vllm_floor(in, outs, e.vllm, e.price, e.decode);
    }
    // Speculative decoding keeps at most K + 1 tokens a verify step, and a
    // verify step costs at least a plain one: a token's decode floor is the
    // plain one over K + 1 (a looser bound, still an upper one on the rate).
    if (!e.sglang && e.vllm.spec.k > 0) f.decode_s /= static_cast<double>(e.vllm.spec.k + 1);
    return finite_bound(1.0 / (f.prefill_s + f.decode_s));
}

namespace {

StepPricer scaled(StepPricer p, double f) {
    if (!p) return p;
    return [p = std::move(p), f](const std::vector<SeqWork>& seqs) { return f * p(seqs); };
}
DecodePricer scaled(DecodePricer p, double f) {
    if (!p) return p;
    return [p = std::move(p), f](std::int64_t batch, std::int64_t context) -> std::optional<double> {
        const std::optional<double> t = p(batch, context);
        return t ? std::optional<double>(f * *t) : std::nullopt;
    };
}
DpStepPricer scaled(DpStepPricer p, double f) {
    if (!p) return p;
    return [p = std::move(p), f](const std::vector<const std::vector<SeqWork>*>& ranks) { return f * p(ranks); };
}
void scale_pool(PoolPricing& p, double f) {
    p.step = scaled(std::move(p.step), f);
    p.decode = scaled(std::move(p.decode), f);
    p.wave = scaled(std::move(p.wave), f);
}
void scale_draft(SchedulerConfig& c, double f) {
    if (!c.spec.draft_s) return;
    c.spec.draft_s = [d = std::move(c.spec.draft_s), f](std::int64_t batch, std::int64_t context) { return f * d(batch, context); };
}

}  // namespace

SearchEngine with_step_scale(const SearchEngine& e, double factor) {
    SearchEngine out = e;
    out.price = scaled(e.price, factor);
    out.decode = scaled(e.decode, factor);
    for (StepPricer& stage : out.stages) stage = scaled(std::move(stage), factor);
    out.dp_price = scaled(e.dp_price, factor);
    scale_draft(out.vllm, factor);
    if (out.pd) {
        scale_pool(out.pd->prefill_pricing, factor);
        scale_pool(out.pd->decode_pricing, factor);
        scale_draft(out.pd->prefill, factor);
        scale_draft(out.pd->decode, factor);
    }
    return out;
}

RateVerdict judge_rate(const Workload& at, const SearchEngine& e, const SearchTargets& t, SimRun& run, std::int64_t& simulated) {
    RateVerdict v;
    if (e.sglang || e.pd) {
        run = run_search_engine(at, e);
        simulated += static_cast<std::int64_t>(at.requests.size());
    } else {
        std::int64_t arrived = 0;
        const std::optional<std::string> stopped = vllm_stopped_early(at, e, t, run, arrived);
        simulated += arrived;
        if (stopped) {
            v.binding = *stopped;
            return v;
        }
    }
    v.attainment = attainment(run, t.slo);
    v.meets = v.attainment.all >= t.goodput;
    v.binding = v.attainment.binding;
    return v;
}

SearchOutcome search_max_rate(const RateWorkload& w, const SearchEngine& e, const SearchTargets& t, const SearchSettings& s,
                              const std::function<bool(double)>& hopeless) {
    SearchOutcome out;
    if (!t.slo.any()) usage_error("the SLO search needs at least one target (ttft, tpot or e2e)");
    if (!(t.goodput > 0 && t.goodput <= 1)) usage_error("goodput must be in (0, 1]");
    if (misses_alone(w, e, t, out)) return out;
    out.bound_rps = rate_upper_bound(w, e);

    Attainment at_fail;
    auto simulate_at = [&](double rate, SimSummary* summary) {
        SimRun run;
        ++out.simulations;
        const RateVerdict v = judge_rate(at_rate(w, rate), e, t, run, out.simulated_requests);
        if (v.meets && summary) *summary = summarise(run, t.slo, false);
        if (!v.meets) {
            at_fail = v.attainment;
            at_fail.binding = v.binding;
        }
        return v.meets;
    };
    // A failing rate is above the answer: once `hopeless` says even it
    // cannot rank, neither can the answer, and the search stops there.
    bool gave_up = false;
    auto passes = [&](double rate, SimSummary* summary) {
        const bool ok = simulate_at(rate, summary);
        if (!ok && hopeless && hopeless(rate)) gave_up = true;
        return ok;
    };
    auto given_up = [&](double fail_rps) {
        out.status = SearchOutcome::Status::Pruned;
        out.fail_rate_rps = fail_rps;
        out.binding = at_fail.binding;
        return out;
    };
    // The bracket: the bound should fail (it leaves prefill out); if it does
    // not, double it, up to kBurstFactor x the bound. The bound is what a
    // full batch's decode steps sustain, and its one slack is that it fits
    // requests of their whole length where on average they hold half their
    // output (at most 2x), so a workload that still passes at 4x passes only
    // because it is over before a queue builds: a burst, not a rate
    // (without this rule, 50 requests of DeepSeek-V3 on 8 H200s passed at
    // 10^12 req/s). Then halve down to a passing rate, no further than a
    // replay of 200,000 simulated seconds (its per-second series stays small).
    double hi = out.bound_rps, lo = 0;
    while (out.simulations < s.max_simulations && passes(hi, &out.at_max)) {
        lo = hi;
        if (hi >= kBurstFactor * out.bound_rps) {
            out.status = SearchOutcome::Status::Burst;
            out.max_rate_rps = lo;
            return out;
        }
        hi *= 2;
    }
    if (gave_up) return given_up(hi);
    if (lo == 0) {
        const double floor = std::max(out.bound_rps / 1024, static_cast<double>(w.base.requests.size()) / 2e5);
        for (double r = hi / 2; lo == 0; r /= 2) {
            if (r < floor || out.simulations >= s.max_simulations) {
                out.status = SearchOutcome::Status::NoRate;
                out.binding = at_fail.binding;
                out.fail_rate_rps = hi;
                return out;
            }
            if (passes(r, &out.at_max)) lo = r;
            else hi = r;
            if (gave_up) return given_up(hi);
        }
    }
    // Geometric bisection: the rate is a scale, and its relative error is what the tolerance bounds.
    while (hi > lo * (1 + s.rel_tolerance) && out.simulations < s.max_simulations) {
        const double mid = std::sqrt(lo * hi);
        if (passes(mid, &out.at_max)) lo = mid;
        else hi = mid;
        if (gave_up) return given_up(hi);
    }
    out.max_rate_rps = lo;
    out.fail_rate_rps = hi;
    out.binding = at_fail.binding;
    return out;
}

namespace {

// Runs `job(i)` for every i in `items` on up to `threads` threads; each job
// writes only its own slots.
template <class Job>
void run_parallel(const std::vector<std::size_t>& items, unsigned threads, Job job) {
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        for (std::size_t k = next++; k < items.size(); k = next++) job(items[k]);
    };
    std::vector<std::thread> pool;
    const unsigned n = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(items.size())));
    for (unsigned i = 1; i < n; ++i) pool.emplace_back(work);
    work();
    for (std::thread& th : pool) th.join();
}

}  // namespace

void run_in_parallel(const std::vector<std::size_t>& items, unsigned threads, const std::function<void(std::size_t)>& job) {
    run_parallel(items, threads, job);
}

namespace {

// The fleet at a rate per replica: its cost, and its capacity (replicas x
// rate), the headroom that breaks a tie in cost.
struct Bar {
    double cost = INFINITY, capacity = 0;
};
Bar fleet_at(double target_rps, double rate_rps, double replica_cost) {
    const double replicas = std::ceil(target_rps / rate_rps);
    return {replicas * replica_cost, replicas * rate_rps};
}
// The bar a candidate must clear to rank among the `keep` cheapest: the keep-th's fleet.
Bar bar(const std::vector<SearchOutcome>& out, const std::vector<bool>& done, const PruneBy& p) {
    std::vector<Bar> found;
    for (std::size_t i = 0; i < out.size(); ++i)
        if (done[i] && out[i].status == SearchOutcome::Status::Found && out[i].max_rate_rps > 0)
            found.push_back(fleet_at(p.target_rps, out[i].max_rate_rps, p.replica_cost[i]));
    if (found.size() < p.keep) return {};
    std::sort(found.begin(), found.end(), [](const Bar& a, const Bar& b) { return a.cost != b.cost ? a.cost < b.cost : a.capacity > b.capacity; });
    return found[p.keep - 1];
}

}  // namespace

namespace {

// Phase 2 of search_all: the long runs (sustained.hpp) on the Found
// outcomes. With pruning, cheapest fleet at the short search's rate first,
// in waves; the confirmed rate is at most the short one, so a candidate
// whose fleet at its short rate is already worse than the `keep`-th
// confirmed fleet cannot rank, and is pruned without its long runs.
void confirm_all(const std::vector<SearchEngine>& engines, const SearchTargets& t, const SearchSettings& s, unsigned threads, const PruneBy* prune,
                 SearchAll& all) {
    std::vector<std::size_t> found;
    for (std::size_t i = 0; i < engines.size(); ++i)
        if (all.errors[i].empty() && all.outcomes[i].status == SearchOutcome::Status::Found) found.push_back(i);
    std::vector<std::function<bool(double)>> hopeless(engines.size());
    auto job = [&](std::size_t i) {
        try {
            confirm_sustained(all.outcomes[i], *s.long_runs, engines[i], t, hopeless[i]);
        } catch (const std::exception& ex) {
            all.outcomes[i].status = SearchOutcome::Status::NoRate;
            all.errors[i] = ex.what();
        }
    };
    if (!prune || prune->keep == 0) {
        run_parallel(found, threads, job);
        return;
    }
    const auto short_fleet = [&](std::size_t i) { return fleet_at(prune->target_rps, all.outcomes[i].max_rate_rps, prune->replica_cost[i]); };
    std::stable_sort(found.begin(), found.end(), [&](std::size_t a, std::size_t b) {
        const Bar x = short_fleet(a), y = short_fleet(b);
        return x.cost != y.cost ? x.cost < y.cost : x.capacity > y.capacity;
    });
    std::vector<bool> done(engines.size(), false);
    const std::size_t wave = std::max<std::size_t>(1, s.wave);
    for (std::size_t k = 0; k < found.size(); k += wave) {
        const Bar b = bar(all.outcomes, done, *prune);
        const auto worse = [b](const Bar& f) { return f.cost > b.cost || (f.cost == b.cost && f.capacity < b.capacity); };
        std::vector<std::size_t> now;
        for (std::size_t j = k; j < std::min(found.size(), k + wave); ++j) {
            const std::size_t i = found[j];
            if (worse(short_fleet(i))) {
                // Not confirmed: the short rate, an upper bound, already loses.
                all.outcomes[i].sustained.short_rate_rps = all.outcomes[i].max_rate_rps;
                all.outcomes[i].status = SearchOutcome::Status::Pruned;
                continue;
            }
            const double target = prune->target_rps, cost = prune->replica_cost[i];
            hopeless[i] = [worse, target, cost](double fail_rps) { return worse(fleet_at(target, fail_rps, cost)); };
            now.push_back(i);
        }
        run_parallel(now, threads, job);
        for (std::size_t i : now) done[i] = true;
    }
}

}  // namespace

SearchAll search_all(const RateWorkload& w, const std::vector<SearchEngine>& engines, const SearchTargets& t, const SearchSettings& s,
                     unsigned threads, const PruneBy* prune) {
    SearchAll all;
    all.outcomes.resize(engines.size());
    all.errors.resize(engines.size());
    std::vector<std::function<bool(double)>> hopeless(engines.size());  // set per wave with pruning
    auto job = [&](std::size_t i) {
        try {
            all.outcomes[i] = search_max_rate(w, engines[i], t, s, hopeless[i]);
        } catch (const std::exception& ex) {
            all.outcomes[i] = SearchOutcome{};
            all.outcomes[i].status = SearchOutcome::Status::NoRate;
            all.errors[i] = ex.what();
        }
    };
    std::vector<std::size_t> order(engines.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (!prune || prune->keep == 0) {
        run_parallel(order, threads, job);
        if (s.long_runs) confirm_all(engines, t, s, threads, prune, all);
        return all;
    }
    // The cheapest fleet each engine could give: at its bound. At that cost
    // its replicas are fixed, so its capacity is at most theirs x the bound.
    std::vector<double> bound(engines.size());
    std::vector<Bar> floor(engines.size());
    for (std::size_t i = 0; i < engines.size(); ++i) {
        bound[i] = rate_upper_bound(w, engines[i]);
        floor[i] = fleet_at(prune->target_rps, bound[i], prune->replica_cost[i]);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return floor[a].cost != floor[b].cost ? floor[a].cost < floor[b].cost : floor[a].capacity > floor[b].capacity;
    });
    std::vector<bool> done(engines.size(), false);
    const std::size_t wave = std::max<std::size_t>(1, s.wave);
    for (std::size_t k = 0; k < order.size(); k += wave) {
        const Bar b = bar(all.outcomes, done, *prune);
        const auto worse = [b](const Bar& f) { return f.cost > b.cost || (f.cost == b.cost && f.capacity < b.capacity); };
        std::vector<std::size_t> now;
        for (std::size_t j = k; j < std::min(order.size(), k + wave); ++j) {
            const std::size_t i = order[j];
            if (worse(floor[i])) {
                all.outcomes[i].status = SearchOutcome::Status::Pruned;
                all.outcomes[i].bound_rps = bound[i];
            } else {
                // A rate that fails bounds the answer as the bound did: its
                // fleet is the cheapest left, its capacity the most.
                const double target = prune->target_rps, cost = prune->replica_cost[i];
                hopeless[i] = [worse, target, cost](double fail_rps) { return worse(fleet_at(target, fail_rps, cost)); };
                now.push_back(i);
            }
        }
        run_parallel(now, threads, job);
        for (std::size_t i : now) done[i] = true;
    }
    if (s.long_runs) confirm_all(engines, t, s, threads, prune, all);
    return all;
}

std::vector<double> goodput_multiples() {
    std::vector<double> out;
    for (int k = 2; k <= 16; ++k) out.push_back(0.125 * k);
    return out;
}

std::vector<GoodputCurve> goodput_curves(const RateWorkload& w, const std::vector<const SearchEngine*>& engines,
                                         const std::vector<double>& chosen_rps, const SearchTargets& t, const std::vector<double>& multiples,
                                         unsigned threads) {
    std::vector<GoodputCurve> out(engines.size());
    for (std::size_t i = 0; i < engines.size(); ++i) {
        out[i].chosen_rps = chosen_rps.at(i);
        out[i].points.resize(multiples.size());
    }
    // One job per (engine, multiple): the slowest runs, at twice the rate, are spread too.
    std::vector<std::size_t> jobs(engines.size() * multiples.size());
    std::iota(jobs.begin(), jobs.end(), std::size_t{0});
    // A run that throws is rethrown after all have ended, the first in job order.
    std::vector<std::exception_ptr> failed(jobs.size());
    run_parallel(jobs, threads, [&](std::size_t job) {
        const std::size_t e = job / multiples.size(), m = job % multiples.size();
        const double rate = out[e].chosen_rps * multiples[m];
        try {
            const SimRun run = run_search_engine(at_rate(w, rate), *engines[e]);
            const SimSummary s = summarise(run, t.slo, false);
            out[e].points[m] = GoodputPoint{multiples[m], rate, s.requests_per_s, s.goodput_requests_per_s.value_or(0), attainment(run, t.slo).all};
        } catch (...) {
            failed[job] = std::current_exception();
        }
    });
    for (const std::exception_ptr& f : failed)
        if (f) std::rethrow_exception(f);
    for (GoodputCurve& c : out)
        for (std::size_t m = 0; m < c.points.size(); ++m)
            if (c.points[m].goodput_share >= t.goodput && (!c.knee || c.points[m].offered_rps > c.points[*c.knee].offered_rps)) c.knee = m;
    return out;
}

std::vector<double> window_rates_rps(const Workload& w, double window_s) {
    if (!(window_s > 0)) usage_error("a rate window must be positive");
    std::vector<double> out;
    if (w.requests.empty()) return out;
    const double first = w.requests.front().arrival_s;
    std::vector<std::int64_t> counts;
    for (const SimRequest& r : w.requests) {
        // Arrivals are within kMaxReplaySeconds (check_arrivals), so the index fits.
        const auto k = static_cast<std::size_t>(checked_trunc(std::floor((r.arrival_s - first) / window_s), "a rate window"));
        if (k >= counts.size()) counts.resize(k + 1, 0);
        counts[k] += 1;
    }
    for (const std::int64_t n : counts) out.push_back(static_cast<double>(n) / window_s);
    return out;
}

}  // namespace kvplan
