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
#include "core/plan/capacity_search.hpp"
#include "core/sim/slo_search.hpp"
#include "io/engine_db.hpp"
#include "io/file_writer.hpp"
#include "io/model_loader.hpp"
#include "report/html_report.hpp"
#include "report/plot_files.hpp"
#include "report/slo_report.hpp"

namespace kvplan {

namespace {

// vllm bench serve's random dataset defaults (vllm/benchmarks/datasets.py,
// RandomDataset: input_len 1024, output_len 128).
constexpr const char* kDefaultInput = "fixed:1024";
constexpr const char* kDefaultOutput = "fixed:128";

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

// `engine`: --engine, parsed once (base_knobs).
void check_flags(const RecommendOptions& o, Engine engine) {
    if (o.slo.empty()) usage_error("--slo: the SLO search needs targets, e.g. --slo ttft=2s,tpot=50ms (or --analytic with --context --ttft --tpot)");
    if (!(o.goodput > 0 && o.goodput <= 1)) usage_error(fmt::format("--goodput {}: expected a share of requests in (0, 1], e.g. 0.99", o.goodput));
    if (o.rate == 0 && o.trace.empty())
        usage_error("--slo: the SLO search needs the traffic: --rate R (with --input-len, --output-len) or --trace FILE");
    if (!o.trace.empty() && (!o.input_len.empty() || !o.output_len.empty()))
        usage_error("--input-len and --output-len describe synthetic traffic: with --trace the trace's requests are replayed");
    if (o.context > 0 || o.ttft > 0 || o.tpot > 0 || o.prompt > 0 || o.num_gpus > 0)
        usage_error("--context, --prompt, --ttft, --tpot and --num-gpus are the analytic search's (--analytic); the SLO search takes --slo");
    if (o.disaggregated && engine != Engine::Vllm)
        usage_error("--disaggregated: disaggregated prefill/decode is simulated with vLLM's engine only; pass --engine vllm");
    if (!o.disaggregated && o.kv_link != "auto") usage_error("--kv-link: the KV transfer link of disaggregated units; add --disaggregated");
    const std::optional<std::vector<std::int64_t>> pp = pp_list(o.pp);
    if (pp && engine != Engine::Vllm && std::any_of(pp->begin(), pp->end(), [](std::int64_t v) { return v > 1; }))
        usage_error("--pp " + o.pp + ": pipelines are simulated with vLLM's engine only; pass --engine vllm, or --pp 1");
    if (o.max_nodes == 1 && (o.gpus_per_node > 0 || o.nic != "ib-ndr"))
        usage_error("--gpus-per-node and --nic place layouts over several nodes: add --max-nodes N");
    if (o.max_nodes > 1) find_nic(o.nic);  // an unknown NIC stops here, not as every layout's rejection
    if (!o.spec.method.empty()) {
        if (engine != Engine::Vllm) usage_error("--spec-method: speculative decoding is simulated with vLLM's engine only; pass --engine vllm");
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
    s.requests = o.requests > 0 ? o.requests : kSloDefaultRequests;
    s.input_len = o.input_len.empty() ? kDefaultInput : o.input_len;
    s.output_len = o.output_len.empty() ? kDefaultOutput : o.output_len;
    s.seed = o.seed;
    return s;
}

// The engine's knobs every candidate starts from: the traffic's flags with
// the dtype lists left to the space's axes (nothing here can be refused).
ServeKnobs base_knobs(const RecommendOptions& o) {
    SimulateOptions base = traffic_options(o);
    base.kv_dtype = "auto";
    base.weights_dtype = "auto";
    return serve_knobs(base);
}

// The space the flags describe, parsed once: the engine's base knobs, the
// dtype lists (each weight format as the engine's profile stores it), the
// layouts' limits, the proposer. Keeps references to `o` and `model`.
SloSpace search_space(const RecommendOptions& o, const ServeKnobs& base_knobs, const ModelSpec& model) {
    SloSpace space;
    space.base = base_knobs;
    space.max_gpus = o.max_gpus;
    space.pp = pp_list(o.pp);
    space.span = NodeSpan{o.max_nodes, o.gpus_per_node, find_nic(o.nic)};
    for (const std::string& kv : split_list(o.kv_dtype, "--kv-dtype")) space.kv_dtypes.push_back({kv, parse_dtype_flag("--kv-dtype", kv)});
    for (const std::string& f : split_list(o.weights_dtype, "--weights-dtype")) {
        SimulateOptions one = traffic_options(o);
        one.kv_dtype = "auto";
        one.weights_dtype = f;
        const ServeKnobs k = serve_knobs(one);
        space.formats.push_back({f, k.weights, k.stored_weights});
    }
    space.two_batch_overlap = o.two_batch_overlap;
    space.disaggregated = o.disaggregated;
    space.kv_link = o.kv_link;
    space.spec = spec_resolver(o.spec, model);
    if (space.spec) {
        space.spec_method = o.spec.method;
        space.spec_tokens = o.spec.tokens;
    }
    return space;
}

// Bad list items, output paths and links stop here, not as a candidate's
// rejection. Each list is tried item by item.
void check_lists(const RecommendOptions& o, const std::vector<Gpu>& gpus) {
    const std::vector<std::string> formats = split_list(o.weights_dtype, "--weights-dtype");
    const std::vector<std::string> kv_dtypes = split_list(o.kv_dtype, "--kv-dtype");
    for (const std::string& f : formats) parse_weight_format("--weights-dtype", f);
    for (const std::string& d : kv_dtypes) parse_dtype_flag("--kv-dtype", d);
    if (formats.empty() || kv_dtypes.empty()) usage_error("--weights-dtype and --kv-dtype need a value (auto, or a list such as auto,fp8)");
    if (!o.plot.empty()) prepare_plot_dir(o.plot);
    if (!o.report.empty()) check_writable(o.report);
    // A malformed --kv-link stops here, not as every unit's rejection; nvlink is checked per device.
    if (o.disaggregated && o.kv_link != "auto" && o.kv_link != "nvlink" && !gpus.empty()) parse_kv_link(o.kv_link, gpus.front(), gpus.front());
}

// The traffic to serve: the synthetic rate, or a trace with at most
// --requests (4,000) of it replayed per run (with --rate, its arrivals
// rescaled to that mean rate, the target).
SloTraffic traffic(const RecommendOptions& o, std::string& label) {
    SloTraffic t{make_workload(traffic_options(o), label), o.trace.empty() ? kSyntheticSource : o.trace, std::nullopt, 0, std::nullopt};
    if (o.trace.empty()) {
        t.rate_rps = o.rate;
        t.synthetic = synthetic_spec(traffic_options(o));
        return t;
    }
    t.max_requests = o.requests > 0 ? o.requests : kSloDefaultTraceRequests;
    if (o.rate > 0) {
        // "This traffic at R req/s": the trace's arrivals stretched to a mean
        // rate of R, its bursts and lengths kept; the target is R.
        t.workload = at_rate(rate_workload(std::move(t.workload)), o.rate);
        t.rate_rps = o.rate;
        label += fmt::format(", arrivals rescaled to a mean of {} req/s", o.rate);
    }
    return t;
}

// What the search tries and how it ranks: the space, the devices and their
// prices, the speed profile (the efficiency flags and any --calibration
// over it, as the analytic search prices), the targets, --top.
SloSearchInputs search_inputs(const RecommendOptions& o, const ServeKnobs& base, const ModelSpec& model, const std::vector<Gpu>& gpus,
                              const std::map<std::string, double>& prices, const SearchTargets& goals) {
    SloSearchInputs in;
    in.efficiency = resolve_efficiency(o.efficiency, o.engine);
    in.space = search_space(o, base, model);
    in.gpus = gpus;
    in.prices = prices;
    in.targets = goals;
    in.top = static_cast<std::size_t>(o.top);
    in.keep_qualified = !o.plot.empty() || !o.report.empty();
    in.threads = std::max(1u, std::thread::hardware_concurrency());
    in.draws = static_cast<int>(o.draws);
    in.optimistic = o.optimistic;
    return in;
}

}  // namespace

CommandOutput run_slo_search(const RecommendOptions& o, const std::vector<Gpu>& gpus, const std::map<std::string, double>& prices) {
    const ServeKnobs base = base_knobs(o);
    check_flags(o, base.engine);
    check_lists(o, gpus);
    const auto start = std::chrono::steady_clock::now();
    const ModelSpec model = resolve_model(o.model);
    const SearchTargets goals{targets(o.slo), o.goodput};
    std::string label;
    SloTraffic t = traffic(o, label);
    SloRecommendResult r = search_capacity(model, std::move(t), search_inputs(o, base, model, gpus, prices, goals));
    r.workload = label;
    if (!o.model.model.empty()) r.base.served = served_model(o.model.model);
    r.wide = o.wide;
    r.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int code = r.candidates.empty() ? 1 : 0;
    const std::string f = o.json ? "json" : o.format;
    std::string text = f == "json"       ? render_slo_json(r)
                       : f == "csv"      ? render_slo_csv(r)
                       : f == "markdown" ? render_slo_markdown(r)
                                         : render_slo_table(r);
    if (!o.plot.empty()) write_plot_files(o.plot, render_recommend_plots(r));
    // The HTML report holds the printed table, whatever --format prints.
    if (!o.report.empty())
        write_file_atomically(o.report,
                              render_html_report(recommend_report_title(r), f == "table" ? text : render_slo_table(r), render_recommend_plots(r)));
    return {std::move(text), code};
}

}  // namespace kvplan
