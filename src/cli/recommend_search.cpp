#include "cli/recommend_search.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "cli/flag_checks.hpp"
#include "cli/sim_setup.hpp"
#include "core/checked.hpp"
#include "core/digits.hpp"
#include "core/error.hpp"
#include "core/memory/engine.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/config_parts.hpp"
#include "core/sim/slo_search.hpp"
#include "io/engine_db.hpp"
#include "io/file_writer.hpp"
#include "report/html_report.hpp"
#include "io/model_loader.hpp"
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
// The latency setting caps the batch here (vLLM's own sweep example in
// docs/benchmarking/sweeps.md tries 32 to 256), and the step's tokens at
// 2,048: "smaller values (e.g., 2048) achieve better inter-token latency
// because there are fewer prefills slowing down decodes" (vLLM's
// docs/configuration/optimization.md, chunked prefill).
constexpr std::int64_t kLatencySeqs = 64;
constexpr std::int64_t kLatencyTokens = 2048;
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
    if (o.rate == 0 && o.trace.empty()) usage_error("--slo: the SLO search needs the traffic: --rate R (with --input-len, --output-len) or --trace FILE");
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

// One GPU x TP x knob setting (or one disaggregated unit), ready to search.
struct Setup {
    SloCandidate row;
    std::unique_ptr<CostModel> cost;          // the pricers point into it (an aggregated candidate)
    std::unique_ptr<PdSide> prefill_side, decode_side;  // a unit's sides (its pricers point into their cost models)
    std::unique_ptr<std::vector<CostModel>> stage_costs;  // a pipeline's stages (the stage pricers point into them)
    // --spec-method: the proposer and its pricer (the engine's draft_s points into them).
    std::unique_ptr<ModelSpec> draft_model;
    std::unique_ptr<SpecInputs> spec;
    std::unique_ptr<DecodePricer> draft_decode;
    SearchEngine engine;
    bool ready = false;
};

// A candidate's row as the tables name it, before it is configured.
Setup named(const Gpu& gpu, std::int64_t tp, std::int64_t pp, const char* knobs, const std::string& kv_dtype, const std::string& weights,
            std::int64_t dp = 1) {
    Setup s;
    s.row.gpu = gpu.id;
    s.row.tp = tp;
    s.row.pp = pp;
    s.row.dp = dp;
    s.row.knobs = knobs;
    s.row.kv_dtype_flag = kv_dtype;
    s.row.weights_flag = weights;
    return s;
}

// The settings the engine commands carry for one vLLM instance of a unit:
// TP ranks, or a DP attention + EP group whose batch counts all its ranks
// (the commands give each engine core its share, as for the aggregated layouts).
void serve_settings(Candidate& c, const Gpu& gpu, const PdSide& side, std::int64_t max_model_len) {
    const std::int64_t dp = side.layout ? side.layout->dp : 1;
    c.gpu = gpu.id;
    c.tp = side.kv_tp();
    c.attention_dp = dp;
    c.batch = checked_mul(side.config.max_num_seqs, dp, "sequences");
    c.max_num_batched_tokens = side.config.max_num_batched_tokens;
    c.max_model_len = max_model_len;
    c.kv_dtype = side.cost.kv_dtype;
    c.vllm_mem_fraction = default_mem_fraction(Engine::Vllm, side.tp);
    c.sglang_mem_fraction = default_mem_fraction(Engine::Sglang, side.tp);
}

// --spec-method: the candidate's proposer as `simulate` runs it (the
// drafter's weights and KV out of the pool, its passes priced under the
// layout when there is one; cli/sim_setup.cpp, add_speculation); false with
// a rejection reason when the drafter leaves no KV cache memory.
bool add_proposer(Setup& s, const SimulateOptions& so, const ModelSpec& model, const CostModelInputs& target,
                  const std::optional<ExpertLayoutInputs>& layout) {
    s.draft_model = std::make_unique<ModelSpec>();
    s.spec = std::make_unique<SpecInputs>(*resolve_spec(so.spec, model, target, *s.draft_model, layout ? &*layout : nullptr));
    if (layout) {
        // One rank's drafts priced as if every rank drafted as many (simulate --dp --spec-method).
        s.draft_decode = std::make_unique<DecodePricer>([&d = s.spec->draft, dp = so.dp](std::int64_t batch, std::int64_t context_sum) -> std::optional<double> {
            return decode_step(d, checked_mul(batch, dp, "drafting sequences"), batch > 0 ? context_sum / batch : 0).total_s;
        });
    } else {
        s.draft_decode = std::make_unique<DecodePricer>(decode_pricer(s.spec->draft));
    }
    SimulateResult scratch;
    scratch.config = s.engine.vllm;
    try {
        add_speculation(serve_knobs(so), model, *s.draft_model, *s.spec, *s.draft_decode, scratch, layout ? &layout->scale_out : nullptr);
    } catch (const Error& e) {
        s.row.reason = std::string("memory: ") + e.what();
        return false;
    }
    s.engine.vllm = scratch.config;
    s.row.serve.spec_method = so.spec.method;
    s.row.serve.spec_tokens = so.spec.tokens;
    if (s.spec->method == SpecMethod::Draft)
        s.row.serve.spec_draft = s.draft_model->source.repo_id.empty() ? s.draft_model->name : s.draft_model->source.repo_id;
    return true;
}

// The engine configuration for `knobs` (default, latency, throughput), or a
// rejection reason in row.reason.
void configure(Setup& s, SimulateOptions so, const ModelSpec& model, const Gpu& gpu, const Workload& w, const std::string& source,
               const Efficiency& efficiency) {
    const bool sglang = so.engine == "sglang";
    std::int64_t max_model_len = 0;
    try {
        SimulateResult scratch;
        std::string pool;
        // The defaults first: the other settings are stated against them.
        SchedulerConfig v;
        SglangConfig g;
        if (sglang) g = sglang_config(serve_knobs(so), model, gpu, scratch);
        else v = engine_config(serve_knobs(so), model, gpu, max_model_len, pool);
        const std::int64_t seqs = sglang ? g.max_running_requests : v.max_num_seqs;
        const std::int64_t tokens = sglang ? g.chunked_prefill_size : v.max_num_batched_tokens;
        // The knobs are per DP rank; SGLang's flags are the server's totals,
        // which it divides over the ranks (sglang_config).
        const std::int64_t totals = sglang ? std::max<std::int64_t>(1, so.dp) : 1;
        if (s.row.knobs == "latency") {
            so.max_num_seqs = (seqs > kLatencySeqs ? kLatencySeqs : std::max<std::int64_t>(1, seqs / 2)) * totals;
            so.max_num_batched_tokens = std::min(tokens, kLatencyTokens) * totals;
        }
        if (s.row.knobs == "throughput") so.max_num_batched_tokens = 2 * tokens * totals;
        if (s.row.knobs != "default") {
            if (sglang) g = sglang_config(serve_knobs(so), model, gpu, scratch);
            else v = engine_config(serve_knobs(so), model, gpu, max_model_len, pool);
        }
        if (sglang) max_model_len = scratch.max_model_len;
        refuse_long_requests(w, max_model_len, source, sglang);
        s.engine.sglang = sglang;
        s.engine.vllm = v;
        s.engine.sglang_config = g;
        s.row.serve.batch = sglang ? g.max_running_requests : v.max_num_seqs;
        s.row.serve.max_num_batched_tokens = sglang ? g.chunked_prefill_size : v.max_num_batched_tokens;
    } catch (const Error& e) {
        s.row.reason = std::string("memory: ") + e.what();
        return;
    }
    // SGLang's --tp counts every GPU of a DP attention layout; attention is split over tp / dp.
    const std::int64_t attention_tp = sglang && so.dp > 1 ? so.tp / so.dp : so.tp;
    const CostModelInputs in{&model, gpu, parse_weight_format("--weights-dtype", so.weights_dtype), parse_dtype_flag("--kv-dtype", so.kv_dtype),
                             attention_tp, efficiency, std::nullopt};
    std::optional<ExpertLayoutInputs> layout;
    if (so.dp > 1) {
        // DP attention + EP within one node (simulate --dp N --enable-expert-parallel;
        // SGLang: --tp N --dp N --ep N).
        ScaleOutInputs si;
        si.tp = so.tp;
        si.dp = so.dp;
        if (sglang) {
            si.rules = ScaleOutRules::Sglang;
            si.ep = so.ep;
        } else {
            si.enable_expert_parallel = true;
        }
        // One node: every GPU on the scale-up link; several: the NIC between them (simulate --nodes).
        const bool nodes = so.nodes.nodes > 1;
        layout = ExpertLayoutInputs{plan_scale_out(model, si), 1.0, bundled_all_to_all_latencies(), nodes ? so.nodes.gpus_per_node : 0,
                                    nodes ? find_nic(so.nodes.nic) : Nic{}};
        if (so.two_batch_overlap) set_two_batch_overlap(*layout, sglang);  // --two-batch-overlap: the engine's micro-batches
        s.cost = std::make_unique<CostModel>(make_cost_model(in, *layout));
        s.row.serve.nodes = nodes ? so.nodes.nodes : 1;
        s.row.serve.two_batch_overlap = so.two_batch_overlap;
        s.engine.dp = so.dp;
        s.engine.dp_price = dp_step_pricer(*s.cost);
    } else {
        s.cost = std::make_unique<CostModel>(make_cost_model(in));
    }
    if (s.cost->flops_per_s <= 0) {
        s.row.reason = "no FLOP/s figure for this device: prefill cannot be priced";
        return;
    }
    if (so.dp <= 1) {
        s.engine.price = step_pricer(*s.cost);
        if (!sglang) s.engine.decode = decode_pricer(*s.cost);
    }
    if (so.pp > 1) {
        s.stage_costs = std::make_unique<std::vector<CostModel>>(stage_cost_models(in, so.pp));
        s.engine.stages = stage_pricers(*s.stage_costs);
    }
    if (!so.spec.method.empty() && !add_proposer(s, so, model, in, layout)) return;
    s.row.serve.gpu = gpu.id;
    s.row.serve.tp = attention_tp;
    s.row.serve.pp = so.pp;
    s.row.serve.attention_dp = std::max<std::int64_t>(1, so.dp);
    s.row.serve.batch *= s.row.serve.attention_dp;  // the replica's sequences; the commands give each engine core its share
    s.row.serve.max_model_len = max_model_len;
    s.row.serve.kv_dtype = s.cost->kv_dtype;
    s.row.serve.vllm_mem_fraction = default_mem_fraction(Engine::Vllm, so.tp);
    s.row.serve.sglang_mem_fraction = default_mem_fraction(Engine::Sglang, so.tp);
    s.ready = true;
}

// TP 1, 2, 4, 8 up to `max_gpus`, those the model's heads divide.
std::vector<std::int64_t> tp_degrees(const ModelSpec& model, std::int64_t max_gpus) {
    std::vector<std::int64_t> out;
    for (std::int64_t tp : {1, 2, 4, 8}) {
        if (tp > max_gpus) continue;
        try {
            check_tp(model, tp);
            out.push_back(tp);
        } catch (const Error&) {
        }
    }
    return out;
}

// A replica's GPUs: TP stages of PP, or DP ranks of TP with EP, within
// `max_gpus` (or, for DP + EP, over `nodes` nodes of `gpus_per_node`).
struct Layout {
    std::int64_t tp = 1, pp = 1, dp = 1;
    std::int64_t nodes = 1;
};

// Where multi-node layouts sit: the flags, or the device's scale-up domain.
struct NodeSpan {
    std::int64_t max_nodes = 1;
    std::int64_t gpus_per_node = 0;  // 0: the device's
    std::string nic = "ib-ndr";
};

// DP attention + EP on 2, 4 and 8 GPUs of one node (TP 1 per rank): vLLM's
// --data-parallel-size N --enable-expert-parallel, SGLang's --tp N --dp N
// --ep N; for a mixture-of-experts model whose experts EP divides, on a
// device whose interconnect times the all-to-alls: the layouts the analytic
// search tries (core/speed/recommend.cpp, expert_layout_sizes), simulated as
// lockstep DP ranks (simulate --dp).
// With --max-nodes N, also 2, 4, 8 and 16 whole nodes up to N: DP = EP = the
// nodes' GPUs, their all-to-all over the NIC between nodes.
std::vector<Layout> expert_layouts(const ModelSpec& model, const Gpu& gpu, const std::string& engine, std::int64_t max_gpus, const NodeSpan& span) {
    std::vector<Layout> out;
    if ((engine != "vllm" && engine != "sglang") || model.experts <= 0 || gpu.interconnect_bytes_per_s <= 0) return out;
    std::vector<std::pair<std::int64_t, std::int64_t>> sizes;  // GPUs, nodes
    for (std::int64_t g : {2, 4, 8})
        if (g <= max_gpus) sizes.push_back({g, 1});
    const std::int64_t per_node = span.gpus_per_node > 0 ? span.gpus_per_node : default_gpus_per_node(gpu.interconnect);
    for (std::int64_t n : {2, 4, 8, 16})
        if (n <= span.max_nodes) sizes.push_back({checked_mul(per_node, n, "GPUs of a layout"), n});
    for (const auto& [g, nodes] : sizes) {
        ScaleOutInputs si;
        si.dp = g;
        if (engine == "sglang") {
            si.rules = ScaleOutRules::Sglang;
            si.tp = g;
            si.ep = g;
        } else {
            si.tp = 1;
            si.enable_expert_parallel = true;
        }
        try {
            plan_scale_out(model, si);
            out.push_back({1, 1, g, nodes});
        } catch (const Error&) {
        }
    }
    return out;
}

// TP 1, 2, 4, 8 (tp_degrees) x the stage counts: --pp's list, or with auto
// 1, and 2 and 4 where vLLM's guide advises a pipeline within a node
// (docs/serving/parallelism_scaling.md, "Edge case: uneven GPU splits"):
// GPUs without NVLink ("leverage pipeline parallelism instead of tensor
// parallelism for higher throughput and lower communication overhead"), or
// more GPUs than the TPs the heads allow (then only the layouts past the
// largest TP). Pipelines run with vLLM only (simulate --pp; SGLang's is not
// simulated), on a device whose interconnect times the sends, with a layer
// per stage at least; TP x PP within `max_gpus`.
std::vector<Layout> layouts(const ModelSpec& model, const Gpu& gpu, const std::string& engine, std::int64_t max_gpus,
                            const std::optional<std::vector<std::int64_t>>& listed, const NodeSpan& span) {
    const std::vector<std::int64_t> tps = tp_degrees(model, max_gpus);
    const std::int64_t widest = tps.empty() ? 0 : tps.back();
    const bool pipelines = engine == "vllm" && gpu.interconnect_bytes_per_s > 0;
    const bool advised = link_family(gpu) == LinkFamily::Pcie;
    std::vector<Layout> out;
    for (std::int64_t pp : listed ? *listed : std::vector<std::int64_t>{1, 2, 4})
        for (std::int64_t tp : tps) {
            if (pp > 1 && (!pipelines || tp * pp > max_gpus || pp > static_cast<std::int64_t>(model.layers.size()))) continue;
            if (pp > 1 && !listed && !advised && tp * pp <= widest) continue;
            out.push_back({tp, pp});
        }
    if (!listed || std::find(listed->begin(), listed->end(), 1) != listed->end())
        for (const Layout& l : expert_layouts(model, gpu, engine, max_gpus, span)) out.push_back(l);
    return out;
}

// Disaggregated units: each side 1 to 4 instances, coprime (2:2 is 1:1
// twice), and the unit within two nodes of 8 GPUs (docs/recommend.md,
// "Disaggregated units").
constexpr std::int64_t kMaxInstancesPerSide = 4;
constexpr std::int64_t kNodeGpus = 8;
constexpr std::int64_t kMaxUnitGpus = 2 * kNodeGpus;

// --kv-link auto: a unit within one node on NVLink where the device has it
// (as NIXL's UCX transport moves it with cuda_ipc), else one 400 Gb/s
// InfiniBand NIC per GPU.
std::string link_for(const std::string& flag, const Gpu& gpu, std::int64_t unit_gpus) {
    if (flag != "auto") return flag;
    return unit_gpus <= kNodeGpus && link_family(gpu) == LinkFamily::Nvlink && gpu.interconnect_bytes_per_s > 0 ? "nvlink" : "ib-ndr";
}

// One disaggregated unit of vLLM instances with each side's engine
// defaults, or a rejection reason in row.reason. A side is TP instances, or
// DP attention + EP groups (--data-parallel-size N --enable-expert-parallel,
// TP 1 a rank) where its dp is above 1, as `simulate --prefill-dp
// --decode-dp` runs them.
void configure_pd(Setup& s, SimulateOptions so, const ModelSpec& model, const Gpu& gpu, const Workload& w, const std::string& source,
                  const std::string& link_flag, const Efficiency& efficiency) {
    auto side_options = [&so](std::int64_t tp, std::int64_t dp) {
        SimulateOptions side = so;
        side.tp = tp;
        side.dp = dp;
        side.enable_expert_parallel = dp > 1;
        return side;
    };
    const char* side = "prefill pool: ";  // which pool a refusal is about
    try {
        s.prefill_side = std::make_unique<PdSide>(pd_side(serve_knobs(side_options(s.row.prefill_tp, s.row.prefill_dp)), model, gpu, efficiency));
        side = "decode pool: ";
        s.decode_side = std::make_unique<PdSide>(pd_side(serve_knobs(side_options(s.row.tp, s.row.dp)), model, gpu, efficiency));
        side = "";
        refuse_long_requests(w, std::min(s.prefill_side->max_model_len, s.decode_side->max_model_len), source, false);
    } catch (const Error& e) {
        s.row.reason = std::string("memory: ") + side + e.what();
        return;
    }
    const PdSide& pre = *s.prefill_side;
    const PdSide& dec = *s.decode_side;
    if (dec.cost.flops_per_s <= 0) {
        s.row.reason = "no FLOP/s figure for this device: prefill cannot be priced";
        return;
    }
    s.row.kv_link = link_for(link_flag, gpu, s.row.gpus_per_replica());
    DisaggUnit u;
    try {
        // Each decode GPU pulls the KV its attention ranks hold: the DP rank's TP shard.
        u.pools = disagg_config(model, s.row.prefill_replicas, s.row.decode_replicas, parse_kv_link(s.row.kv_link, gpu, gpu), dec.kv_tp(),
                                parse_dtype_flag("--kv-dtype", so.kv_dtype), false);
    } catch (const Error& e) {
        s.row.reason = std::string("link: ") + e.what();
        return;
    }
    u.prefill = pre.config;
    u.decode = dec.config;
    u.prefill_pricing = pool_pricing(pre);
    u.decode_pricing = pool_pricing(dec);
    s.engine.pd = std::move(u);
    const std::int64_t max_model_len = std::min(pre.max_model_len, dec.max_model_len);
    serve_settings(s.row.prefill_serve, gpu, pre, max_model_len);
    serve_settings(s.row.serve, gpu, dec, max_model_len);
    s.ready = true;
}

// A unit's side: TP instances, or a DP attention + EP group of `dp` GPUs (TP 1 a rank).
struct UnitSide {
    std::int64_t tp = 1, dp = 1;
    std::int64_t gpus() const { return tp * dp; }
};

// Every unit for one GPU, KV dtype and weight format: each side's TP, or
// for a mixture-of-experts model each side's DP + EP group (the layouts the
// aggregated search tries within one node), and the P:D ratio. Both sides
// are of one kind, as `simulate --enable-expert-parallel` applies to both.
void add_units(std::vector<Setup>& out, const RecommendOptions& o, const SimulateOptions& so, const ModelSpec& model, const Gpu& gpu,
               const Workload& w, const std::string& source, const Efficiency& efficiency) {
    std::vector<UnitSide> sides;
    for (std::int64_t tp : tp_degrees(model, o.max_gpus)) sides.push_back({tp, 1});
    for (const Layout& l : expert_layouts(model, gpu, o.engine, o.max_gpus, NodeSpan{}))
        if (l.nodes == 1) sides.push_back({1, l.dp});
    for (const UnitSide& pre : sides)
        for (const UnitSide& dec : sides) {
            if ((pre.dp > 1) != (dec.dp > 1)) continue;
            for (std::int64_t p = 1; p <= kMaxInstancesPerSide; ++p)
                for (std::int64_t d = 1; d <= kMaxInstancesPerSide; ++d) {
                    if (std::gcd(p, d) != 1 || p * pre.gpus() + d * dec.gpus() > kMaxUnitGpus) continue;
                    Setup s = named(gpu, dec.tp, 1, "default", so.kv_dtype, so.weights_dtype, dec.dp);
                    s.row.prefill_tp = pre.tp;
                    s.row.prefill_dp = pre.dp;
                    s.row.prefill_replicas = p;
                    s.row.decode_replicas = d;
                    configure_pd(s, so, model, gpu, w, source, o.kv_link, efficiency);
                    out.push_back(std::move(s));
                }
        }
}

// Every GPU x TP x PP x KV dtype x weight format x knob setting, in that order
// (then, with --disaggregated, each GPU's units).
std::vector<Setup> candidates(const RecommendOptions& o, const SimulateOptions& base, const ModelSpec& model, const std::vector<Gpu>& gpus,
                              const Workload& w, const std::string& source, const Efficiency& efficiency) {
    const std::vector<std::string> kv_dtypes = split_list(o.kv_dtype, "--kv-dtype");
    const std::vector<std::string> formats = split_list(o.weights_dtype, "--weights-dtype");
    const std::optional<std::vector<std::int64_t>> pp = pp_list(o.pp);
    std::vector<Setup> out;
    for (const Gpu& gpu : gpus)
        for (const Layout& l : layouts(model, gpu, o.engine, o.max_gpus, pp, NodeSpan{o.max_nodes, o.gpus_per_node, o.nic})) {
            for (const std::string& kv : kv_dtypes)
                for (const std::string& weights : formats)
                    for (const char* knobs : {"default", "latency", "throughput"}) {
                        if (l.pp > 1 && !o.spec.method.empty()) continue;  // a pipeline does not speculate in the simulator
                        Setup s = named(gpu, l.tp, l.pp, knobs, kv, weights, l.dp);
                        SimulateOptions so = base;
                        so.tp = l.tp;
                        so.pp = l.pp;
                        if (l.dp > 1 && o.engine == "sglang") {  // --tp N --dp N --ep N: N GPUs in all
                            so.tp = l.dp;
                            so.dp = l.dp;
                            so.ep = l.dp;
                        } else if (l.dp > 1) {
                            so.dp = l.dp;
                            so.enable_expert_parallel = true;
                        }
                        if (l.nodes > 1) so.nodes = NodeFlags{l.nodes, l.dp / l.nodes, o.nic};
                        so.two_batch_overlap = l.dp > 1 && o.two_batch_overlap;
                        so.kv_dtype = kv;
                        so.weights_dtype = weights;
                        configure(s, so, model, gpu, w, source, efficiency);
                        out.push_back(std::move(s));
                    }
        }
    if (o.disaggregated)
        for (const Gpu& gpu : gpus)
            for (const std::string& kv : kv_dtypes)
                for (const std::string& weights : formats) {
                    SimulateOptions so = base;
                    so.kv_dtype = kv;
                    so.weights_dtype = weights;
                    add_units(out, o, so, model, gpu, w, source, efficiency);
                }
    return out;
}

std::string rejection(const SearchOutcome& x, const std::string& error, double target_rps, std::size_t top) {
    if (!error.empty()) return "simulation: " + error;
    if (x.status == SearchOutcome::Status::Pruned && x.simulations > 0) {
        const double replicas = std::ceil(target_rps / x.fail_rate_rps);
        return fmt::format("cost: it fails at {:.3g} req/s per replica, so it needs more than {} replica{} and costs more than the {} "
                           "cheapest found",
                           x.fail_rate_rps, replicas, replicas > 1 ? "s" : "", top);
    }
    if (x.status == SearchOutcome::Status::Pruned) {
        const double replicas = std::ceil(target_rps / x.bound_rps);
        return fmt::format("cost: even at its bound of {:.2f} req/s per replica ({} replica{}) it costs more than the {} cheapest found",
                           x.bound_rps, replicas, replicas > 1 ? "s" : "", top);
    }
    if (x.status == SearchOutcome::Status::Burst)
        return fmt::format("simulation: the workload meets the targets even at {:.3g} req/s, {:g} x the most its decode steps sustain: "
                           "too few requests to find its rate (raise --requests, or replay a longer trace)",
                           x.max_rate_rps, kBurstFactor);
    if (x.status == SearchOutcome::Status::SloAlone)
        return fmt::format("slo: {} is {:.1f} ms for a request alone (the goodput quantile), over the {:.1f} ms target", x.binding,
                           x.alone_value_s * 1e3, x.target_s * 1e3);
    return fmt::format("slo: misses {} at every rate down to {:.3g} req/s", x.binding.empty() ? "a target" : x.binding, x.fail_rate_rps);
}

// Best first: priced before unpriced, then cheaper per hour, fewer GPUs,
// more headroom (the fleet's capacity, replicas x rate per replica: two
// replicas of one GPU against one unit of two compare as fleets);
// candidate order breaks the remaining ties.
bool better(const SloCandidate& a, const SloCandidate& b) {
    if (a.fleet.usd_per_hour.has_value() != b.fleet.usd_per_hour.has_value()) return a.fleet.usd_per_hour.has_value();
    if (a.fleet.usd_per_hour && *a.fleet.usd_per_hour != *b.fleet.usd_per_hour) return *a.fleet.usd_per_hour < *b.fleet.usd_per_hour;
    if (a.fleet.gpus != b.fleet.gpus) return a.fleet.gpus < b.fleet.gpus;
    return static_cast<double>(a.fleet.replicas) * a.outcome.max_rate_rps > static_cast<double>(b.fleet.replicas) * b.outcome.max_rate_rps;
}

// Nothing qualifies: the candidates that were too few requests' burst, or
// the rejected candidate closest to its target alone, and what would pass.
std::string nearest(const std::vector<SloCandidate>& rejected, std::int64_t requests_per_run) {
    const auto bursts = std::count_if(rejected.begin(), rejected.end(), [](const SloCandidate& c) { return c.outcome.status == SearchOutcome::Status::Burst; });
    if (bursts > 0)
        return fmt::format("{} candidate{} meet{} the targets even at {:g} x the rate {} decode steps sustain: {} requests are too few "
                           "to find a rate. Raise --requests (the default is {}) or replay a longer trace.",
                           bursts, bursts > 1 ? "s" : "", bursts > 1 ? "" : "s", kBurstFactor, bursts > 1 ? "their" : "its",
                           group_digits(requests_per_run), group_digits(kDefaultRequests));
    const SloCandidate* best = nullptr;
    for (const SloCandidate& c : rejected)
        if (c.outcome.status == SearchOutcome::Status::SloAlone && c.reason.starts_with("slo") &&
            (!best || c.outcome.alone_value_s / c.outcome.target_s < best->outcome.alone_value_s / best->outcome.target_s))
            best = &c;
    if (!best) return "No GPU x TP up to --max-gpus holds the model and a request of this traffic.";
    const double need = std::ceil(best->outcome.alone_value_s * 1e4) / 1e4;  // rounded up to 0.1 ms
    const std::string layout = best->pd()      ? unit_sides(*best)
                               : best->pp > 1 ? fmt::format("{} TP {} PP {}", best->gpu, best->tp, best->pp)
                                              : fmt::format("{} TP {}", best->gpu, best->tp);
    const std::string knobs = best->pd() ? fmt::format("{}P:{}D", best->prefill_replicas, best->decode_replicas) : best->knobs;
    return fmt::format("The {} target binds: the closest is {} ({}), {:.1f} ms for a request alone; {}={:.1f}ms would pass at a low rate.",
                       best->outcome.binding, layout, knobs, best->outcome.alone_value_s * 1e3, best->outcome.binding, need * 1e3);
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
    std::vector<Setup> setups = candidates(o, base, model, gpus, w, source, efficiency);
    for (std::size_t i = 0; i < setups.size(); ++i) setups[i].row.order = i;
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
            c.reason = rejection(c.outcome, found.errors[k], r.target_rps, r.top);
            continue;
        }
        const auto price = prices.find(c.gpu);
        c.fleet = fleet_cost(r.target_rps, c.outcome.max_rate_rps, c.gpus_per_replica(),
                             price == prices.end() ? std::nullopt : std::optional<double>(price->second), r.mean_input_tokens,
                             r.mean_output_tokens);
        if (!c.pd()) c.serve.dp = c.fleet.replicas;  // a unit's instances are separate servers
        if (!minute_rates.empty())
            c.scaled = replicas_over_time(minute_rates, 60, c.outcome.max_rate_rps, c.fleet, c.gpus_per_replica(),
                                          price == prices.end() ? std::nullopt : std::optional<double>(price->second));
    }
    r.tried = static_cast<std::int64_t>(setups.size());
    for (Setup& s : setups) (s.row.reason.empty() ? r.candidates : r.rejected).push_back(std::move(s.row));
    std::stable_sort(r.candidates.begin(), r.candidates.end(), better);
    if (!o.plot.empty() || !o.report.empty()) r.qualified = r.candidates;
    for (const SloCandidate& c : r.candidates) {
        std::optional<SloCandidate>& best = c.pd() ? r.best_disaggregated : r.best_aggregated;
        if (!best) best = c;
    }
    r.disaggregated_wins = r.best_aggregated && r.best_disaggregated && better(*r.best_disaggregated, *r.best_aggregated);
    // Those that qualify but rank below --top lose on cost.
    for (std::size_t i = r.top; i < r.candidates.size(); ++i) {
        SloCandidate c = r.candidates[i];
        const SloCandidate& best = r.candidates.front();
        c.reason = c.fleet.usd_per_hour && best.fleet.usd_per_hour
                       ? fmt::format("cost: ranked {}, {:.2f} USD/hour against the best's {:.2f}", i + 1, *c.fleet.usd_per_hour, *best.fleet.usd_per_hour)
                       : fmt::format("cost: ranked {}, {} GPUs against the best's {}", i + 1, c.fleet.gpus, best.fleet.gpus);
        r.rejected.push_back(std::move(c));
    }
    if (r.candidates.size() > r.top) r.candidates.resize(r.top);
    // The rejections that say most first: missed targets, then memory, then the rest; cost last.
    auto rank = [](const SloCandidate& c) { return c.reason.starts_with("slo") ? 0 : c.reason.starts_with("memory") ? 1 : c.reason.starts_with("cost") ? 3 : 2; };
    std::stable_sort(r.rejected.begin(), r.rejected.end(), [&](const SloCandidate& a, const SloCandidate& b) { return rank(a) < rank(b); });
    if (r.candidates.empty()) r.nearest = nearest(r.rejected, r.requests_per_run);
    r.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!r.qualified.empty()) {
        // The goodput curves of the best three, on the search's own workload and engines.
        std::vector<const SearchEngine*> best;
        std::vector<double> chosen;
        for (std::size_t k = 0; k < r.qualified.size() && k < kCurves; ++k) {
            best.push_back(&setups[r.qualified[k].order].engine);
            chosen.push_back(r.qualified[k].outcome.max_rate_rps);
        }
        r.curves = goodput_curves(rw, best, chosen, SearchTargets{r.slo, r.goodput}, goodput_multiples(), std::max(1u, std::thread::hardware_concurrency()));
    }
    const int code = r.candidates.empty() ? 1 : 0;
    std::string text = o.json ? render_slo_json(r) : render_slo_table(r);
    if (!o.plot.empty()) write_plot_files(o.plot, render_recommend_plots(r));
    if (!o.report.empty()) write_file_atomically(o.report, render_html_report(recommend_report_title(r), text, render_recommend_plots(r)));
    return {std::move(text), code};
}

}  // namespace kvplan
