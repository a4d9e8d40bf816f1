#include "cli/recommend_search.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "cli/flag_checks.hpp"
#include "cli/sim_setup.hpp"
#include "cli/spec_options.hpp"
#include "core/error.hpp"
#include "core/plan/slo_candidates.hpp"
#include "core/sim/slo_search.hpp"
#include "io/engine_db.hpp"
#include "io/file_writer.hpp"
#include "io/model_loader.hpp"
#include "report/html_report.hpp"
#include "report/plot_files.hpp"
#include "report/slo_report.hpp"

namespace kvplan {

namespace {

// Requests per simulated run of synthetic traffic: at goodput 0.99 the 1% a
// run may miss is 20 requests, enough that one request more or less moves
// the attainment by 0.05 points, and few enough that a run of Llama-3.1-8B
// on one device takes milliseconds (docs/recommend.md).
constexpr std::int64_t kDefaultRequests = 2000;
// A trace's runs replay at most 4,000 of its requests, evenly spaced in
// it: twice the synthetic runs, for a trace's lengths vary more than a fixed
// synthetic length; --requests sets it.
constexpr std::int64_t kDefaultTraceRequests = 4000;
// vllm bench serve's random dataset defaults (vllm/benchmarks/datasets.py,
// RandomDataset: input_len 1024, output_len 128).
constexpr const char* kDefaultInput = "fixed:1024";
constexpr const char* kDefaultOutput = "fixed:128";
// --plot and --report: the goodput curves of this many of the best candidates.
constexpr std::size_t kCurves = 3;

// --pp: auto, or the stage counts listed (each 1 to 8).
std::optional<std::vector<std::int64_t>> pp_list(const std::string& text) {
    if (text == "auto") return std::nullopt;
    std::vector<std::int64_t> out;
    for (const std::string& item : split_list(text, "--pp")) {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (ec != std::errc() || end != item.data() + item.size() || v < 1 || v > 8)
            usage_error("--pp " + text + ": expected auto or a list of pipeline stage counts from 1 to 8, e.g. 1,2,4");
        if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    if (out.empty()) usage_error("--pp " + text + ": expected auto or a list of pipeline stage counts from 1 to 8, e.g. 1,2,4");
    return out;
}

void check_flags(const RecommendOptions& o) {
    if (o.slo.empty()) usage_error("--slo: the SLO search needs targets, e.g. --slo ttft=2s,tpot=50ms (or --analytic with --context --ttft --tpot)");
    if (!(o.goodput > 0 && o.goodput <= 1)) usage_error(fmt::format("--goodput {}: expected a share of requests in (0, 1], e.g. 0.99", o.goodput));
    if (o.rate == 0 && o.trace.empty())
        usage_error("--slo: the SLO search needs the traffic: --rate R (with --input-len, --output-len) or --trace FILE");
    if (o.rate > 0 && !o.trace.empty()) usage_error("give --rate (synthetic traffic) or --trace, not both");
    if (!o.trace.empty() && (!o.input_len.empty() || !o.output_len.empty()))
        usage_error("--input-len and --output-len describe synthetic traffic: with --trace the trace's requests are replayed");
    if (o.context > 0 || o.ttft > 0 || o.tpot > 0 || o.prompt > 0 || o.num_gpus > 0)
        usage_error("--context, --prompt, --ttft, --tpot and --num-gpus are the analytic search's (--analytic); the SLO search takes --slo");
    if (o.format == "markdown" || o.format == "csv") usage_error("--format " + o.format + ": the SLO search prints a table or --json");
    if (o.disaggregated && o.engine != "vllm")
        usage_error("--disaggregated: disaggregated prefill/decode is simulated with vLLM's engine only; pass --engine vllm");
    if (!o.disaggregated && o.kv_link != "auto") usage_error("--kv-link: the KV transfer link of disaggregated units; add --disaggregated");
    const std::optional<std::vector<std::int64_t>> pp = pp_list(o.pp);
    if (pp && o.engine != "vllm" && std::any_of(pp->begin(), pp->end(), [](std::int64_t v) { return v > 1; }))
        usage_error("--pp " + o.pp + ": pipelines are simulated with vLLM's engine only; pass --engine vllm, or --pp 1");
    if (o.max_nodes == 1 && (o.gpus_per_node > 0 || o.nic != "ib-ndr"))
        usage_error("--gpus-per-node and --nic place layouts over several nodes: add --max-nodes N");
    if (o.max_nodes > 1) find_nic(o.nic);  // an unknown NIC stops here, not as every layout's rejection
    if (!o.spec.method.empty()) {
        if (o.engine != "vllm") usage_error("--spec-method: speculative decoding is simulated with vLLM's engine only; pass --engine vllm");
        if (o.disaggregated) usage_error("--spec-method: speculative decoding in disaggregated units is not simulated; drop one of them");
        if (pp && std::any_of(pp->begin(), pp->end(), [](std::int64_t v) { return v > 1; }))
            usage_error("--spec-method: speculative decoding with pipeline parallelism is not simulated; pass --pp 1");
    }
    if (o.two_batch_overlap && o.disaggregated)
        usage_error("--two-batch-overlap applies to the DP attention + EP layouts, not to disaggregated units; drop one of them");
}

Slo targets(const std::string& text) {
    const Slo slo = parse_slo(text);
    for (const std::optional<double>& v : {slo.ttft_s, slo.tpot_s, slo.e2e_s})
        if (v && !(*v > 0)) usage_error("--slo " + text + ": every target must be a positive time");
    return slo;
}

// The traffic as simulate reads it, with the search's defaults.
SimulateOptions traffic_options(const RecommendOptions& o) {
    SimulateOptions s;
    s.engine = o.engine;
    s.kv_dtype = o.kv_dtype;
    s.weights_dtype = o.weights_dtype;
    s.spec = o.spec;  // the candidates' proposer (add_proposer); the acceptance draws seeded by --seed
    s.seed = o.seed;
    if (!o.trace.empty()) {
        s.trace = o.trace;
        s.trace_format = o.trace_format;
        s.time_scale = o.time_scale;
        s.limit = o.limit;
        return s;
    }
    s.rate = o.rate;
    s.requests = o.requests > 0 ? o.requests : kDefaultRequests;
    s.input_len = o.input_len.empty() ? kDefaultInput : o.input_len;
    s.output_len = o.output_len.empty() ? kDefaultOutput : o.output_len;
    s.seed = o.seed;
    return s;
}

// The space the flags describe, parsed once: the engine's base knobs, the
// dtype lists (each weight format as the engine's profile stores it), the
// layouts' limits, the proposer.
SloSpace search_space(const RecommendOptions& o, const ModelSpec& model) {
    SloSpace space;
    SimulateOptions base = traffic_options(o);
    base.kv_dtype = "auto";  // the lists are the space's axes
    base.weights_dtype = "auto";
    space.base = serve_knobs(base);
    space.max_gpus = o.max_gpus;
    space.pp = pp_list(o.pp);
    space.span = NodeSpan{o.max_nodes, o.gpus_per_node, find_nic(o.nic)};
    for (const std::string& kv : split_list(o.kv_dtype, "--kv-dtype")) space.kv_dtypes.push_back({kv, parse_dtype_flag("--kv-dtype", kv)});
    for (const std::string& f : split_list(o.weights_dtype, "--weights-dtype")) {
        SimulateOptions one = base;
        one.weights_dtype = f;
        const ServeKnobs k = serve_knobs(one);
        space.formats.push_back({f, k.weights, k.stored_weights});
    }
    space.two_batch_overlap = o.two_batch_overlap;
    space.disaggregated = o.disaggregated;
    space.kv_link = o.kv_link;
    if (!o.spec.method.empty()) {
        space.spec = [&o, &model](const CostModelInputs& target, const ExpertLayoutInputs* layout, ModelSpec& draft) {
            return resolve_spec(o.spec, model, target, draft, layout);
        };
        space.spec_method = o.spec.method;
        space.spec_tokens = o.spec.tokens;
    }
    return space;
}

}  // namespace

CommandOutput run_slo_search(const RecommendOptions& o, const std::vector<Gpu>& gpus, const std::map<std::string, double>& prices) {
    check_flags(o);
    // Bad flags stop here, not as a candidate's rejection. Each takes a list: the search tries every item.
    const std::vector<std::string> formats = split_list(o.weights_dtype, "--weights-dtype");
    const std::vector<std::string> kv_dtypes = split_list(o.kv_dtype, "--kv-dtype");
    for (const std::string& f : formats) parse_weight_format("--weights-dtype", f);
    for (const std::string& d : kv_dtypes) parse_dtype_flag("--kv-dtype", d);
    if (formats.empty() || kv_dtypes.empty()) usage_error("--weights-dtype and --kv-dtype need a value (auto, or a list such as auto,fp8)");
    if (!o.plot.empty()) prepare_plot_dir(o.plot);
    if (!o.report.empty()) check_writable(o.report);
    // A malformed --kv-link stops here, not as every unit's rejection; nvlink is checked per device.
    if (o.disaggregated && o.kv_link != "auto" && o.kv_link != "nvlink" && !gpus.empty()) parse_kv_link(o.kv_link, gpus.front(), gpus.front());
    const auto start = std::chrono::steady_clock::now();
    ModelSpec model = resolve_model(o.model);
    SloRecommendResult r;
    r.base.model = model.name;
    if (!o.model.model.empty()) r.base.served = served_model(o.model.model);
    r.base.inputs.model = &model;
    r.base.inputs.weights = parse_weight_format("--weights-dtype", formats.front());
    r.kv_axis = kv_dtypes.size() > 1;
    r.weights_axis = formats.size() > 1;
    r.engine = o.engine;
    r.slo = targets(o.slo);
    r.goodput = o.goodput;
    r.top = static_cast<std::size_t>(o.top);
    r.wide = o.wide;
    r.disaggregated = o.disaggregated;
    for (const Gpu& g : gpus) r.gpu_ids.push_back(g.id);

    const SimulateOptions base = traffic_options(o);
    Workload w = make_workload(base, r.workload);
    const std::string source = o.trace.empty() ? kSyntheticSource : o.trace;
    // The target: the synthetic rate, or the trace's busiest minute (a fleet
    // sized for it also serves the quieter ones).
    r.target_rps = o.trace.empty() ? o.rate : peak_rate_rps(w, 60);
    r.target_source = o.trace.empty() ? "--rate" : "the trace's peak minute";
    for (const SimRequest& q : w.requests) {
        r.mean_input_tokens += static_cast<double>(q.input_tokens);
        r.mean_output_tokens += static_cast<double>(q.output_tokens);
    }
    // Replicas over time: the whole trace's rate minute by minute.
    const std::vector<double> minute_rates = o.trace.empty() ? std::vector<double>{} : window_rates_rps(w, 60);
    r.mean_input_tokens /= static_cast<double>(std::max<std::size_t>(1, w.requests.size()));
    r.mean_output_tokens /= static_cast<double>(std::max<std::size_t>(1, w.requests.size()));
    if (!o.trace.empty()) {
        const auto cap = static_cast<std::size_t>(o.requests > 0 ? o.requests : kDefaultTraceRequests);
        if (w.requests.size() > cap) {
            // Every k-th request: the runs keep the whole trace's mix of
            // lengths and the shape of its rate over time (the first 4,000 of
            // the Azure conversation trace are shorter than the rest).
            const std::size_t k = (w.requests.size() + cap - 1) / cap;
            std::vector<SimRequest> kept;
            for (std::size_t i = 0; i < w.requests.size(); i += k) kept.push_back(std::move(w.requests[i]));
            w.requests = std::move(kept);
            r.workload += fmt::format(", 1 request in {} replayed per run", k);
        }
    }
    r.requests_per_run = static_cast<std::int64_t>(w.requests.size());

    // The speed profile with the efficiency flags and any --calibration over it, as the analytic search prices.
    const Efficiency efficiency = resolve_efficiency(o.efficiency, o.engine);
    std::vector<SloSetup> setups = slo_candidates(search_space(o, model), model, gpus, w, source, efficiency);
    const RateWorkload rw = rate_workload(std::move(w));
    std::vector<std::size_t> index;  // setups searched
    std::vector<SearchEngine> engines;
    for (std::size_t i = 0; i < setups.size(); ++i)
        if (setups[i].ready) {
            index.push_back(i);
            engines.push_back(setups[i].engine);
        }
    // Ranked by cost, candidates that cannot reach the top need no search;
    // only when every candidate's cost is in the same unit (all priced, or none).
    PruneBy prune{r.target_rps, {}, r.top};
    std::size_t priced = 0;
    for (std::size_t i : index) {
        const auto p = prices.find(setups[i].row.gpu);
        priced += p != prices.end();
        prune.replica_cost.push_back(static_cast<double>(setups[i].row.gpus_per_replica()) * (p != prices.end() ? p->second : 1.0));
    }
    const bool prunable = priced == 0 || priced == index.size();
    const SearchAll found = search_all(rw, engines, SearchTargets{r.slo, r.goodput}, SearchSettings{},
                                       std::max(1u, std::thread::hardware_concurrency()), prunable ? &prune : nullptr);
    for (std::size_t k = 0; k < index.size(); ++k) {
        SloCandidate& c = setups[index[k]].row;
        c.outcome = found.outcomes[k];
        r.simulations += c.outcome.simulations;
        r.simulated_requests += c.outcome.simulated_requests;
        if (c.outcome.status != SearchOutcome::Status::Found || !found.errors[k].empty()) {
            const auto [why, words] = outcome_rejection(c.outcome, found.errors[k], r.target_rps, r.top);
            reject(c, why, words);
            continue;
        }
        const auto price = prices.find(c.gpu);
        c.fleet = fleet_cost(r.target_rps, c.outcome.max_rate_rps, c.gpus_per_replica(),
                             price == prices.end() ? std::nullopt : std::optional<double>(price->second), r.mean_input_tokens, r.mean_output_tokens);
        if (!c.pd()) c.serve.dp = c.fleet.replicas;  // a unit's instances are separate servers
        if (!minute_rates.empty())
            c.scaled = replicas_over_time(minute_rates, 60, c.outcome.max_rate_rps, c.fleet, c.gpus_per_replica(),
                                          price == prices.end() ? std::nullopt : std::optional<double>(price->second));
    }
    r.tried = static_cast<std::int64_t>(setups.size());
    for (SloSetup& s : setups) (s.row.rejected() ? r.rejected : r.candidates).push_back(std::move(s.row));
    std::stable_sort(r.candidates.begin(), r.candidates.end(), ranks_before);
    if (!o.plot.empty() || !o.report.empty()) r.qualified = r.candidates;
    for (const SloCandidate& c : r.candidates) {
        std::optional<SloCandidate>& best = c.pd() ? r.best_disaggregated : r.best_aggregated;
        if (!best) best = c;
    }
    r.disaggregated_wins = r.best_aggregated && r.best_disaggregated && ranks_before(*r.best_disaggregated, *r.best_aggregated);
    // Those that qualify but rank below --top lose on cost.
    for (std::size_t i = r.top; i < r.candidates.size(); ++i) {
        SloCandidate c = r.candidates[i];
        reject(c, Rejection::Cost, cost_rank_words(c, r.candidates.front(), i + 1));
        r.rejected.push_back(std::move(c));
    }
    if (r.candidates.size() > r.top) r.candidates.resize(r.top);
    // The rejections that say most first: missed targets, then memory, then the rest; cost last.
    auto rank = [](const SloCandidate& c) {
        return c.rejection == Rejection::Slo ? 0 : c.rejection == Rejection::Memory ? 1 : c.rejection == Rejection::Cost ? 3 : 2;
    };
    std::stable_sort(r.rejected.begin(), r.rejected.end(), [&](const SloCandidate& a, const SloCandidate& b) { return rank(a) < rank(b); });
    if (r.candidates.empty()) r.nearest = nearest_words(r.rejected, r.requests_per_run, kDefaultRequests);
    r.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!r.qualified.empty()) {
        // The goodput curves of the best three, on the search's own workload and engines.
        std::vector<const SearchEngine*> best;
        std::vector<double> chosen;
        for (std::size_t k = 0; k < r.qualified.size() && k < kCurves; ++k) {
            best.push_back(&setups[r.qualified[k].order].engine);
            chosen.push_back(r.qualified[k].outcome.max_rate_rps);
        }
        r.curves =
            goodput_curves(rw, best, chosen, SearchTargets{r.slo, r.goodput}, goodput_multiples(), std::max(1u, std::thread::hardware_concurrency()));
    }
    const int code = r.candidates.empty() ? 1 : 0;
    std::string text = o.json ? render_slo_json(r) : render_slo_table(r);
    if (!o.plot.empty()) write_plot_files(o.plot, render_recommend_plots(r));
    if (!o.report.empty()) write_file_atomically(o.report, render_html_report(recommend_report_title(r), text, render_recommend_plots(r)));
    return {std::move(text), code};
}

}  // namespace kvplan
