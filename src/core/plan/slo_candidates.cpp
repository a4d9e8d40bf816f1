// The SLO search's candidates (core/plan/slo_candidates.hpp). Moved from
// the command line (cli/recommend_search.cpp), where each candidate was a
// copy of simulate's flags; each is now a ServeKnobs.
#include "core/plan/slo_candidates.hpp"

#include <algorithm>
#include <numeric>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/engine.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"

namespace kvplan {

namespace {

// The latency setting caps the batch here (vLLM's own sweep example in
// docs/benchmarking/sweeps.md tries 32 to 256), and the step's tokens at
// 2,048: "smaller values (e.g., 2048) achieve better inter-token latency
// because there are fewer prefills slowing down decodes" (vLLM's
// docs/configuration/optimization.md, chunked prefill).
constexpr std::int64_t kLatencySeqs = 64;
constexpr std::int64_t kLatencyTokens = 2048;

// A candidate's row as the tables name it, before it is configured.
SloSetup named(const Gpu& gpu, std::int64_t tp, std::int64_t pp, const char* knobs, const std::string& kv_dtype, const std::string& weights,
               std::int64_t dp = 1) {
    SloSetup s;
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
// layout when there is one; core/plan/engine_setup.cpp, add_speculation); false with
// a rejection reason when the drafter leaves no KV cache memory.
bool add_proposer(SloSetup& s, const SloSpace& space, const ServeKnobs& k, const ModelSpec& model, const CostModelInputs& target,
                  const std::optional<ExpertLayoutInputs>& layout) {
    s.draft_model = std::make_unique<ModelSpec>();
    s.spec = std::make_unique<SpecInputs>(*space.spec(target, layout ? &*layout : nullptr, *s.draft_model));
    if (layout) {
        // One rank's drafts priced as if every rank drafted as many (simulate --dp --spec-method).
        s.draft_decode = std::make_unique<DecodePricer>(
            [&d = s.spec->draft, dp = k.layout.dp](std::int64_t batch, std::int64_t context_sum) -> std::optional<double> {
                return decode_step(d, checked_mul(batch, dp, "drafting sequences"), batch > 0 ? context_sum / batch : 0).total_s;
            });
    } else {
        s.draft_decode = std::make_unique<DecodePricer>(decode_pricer(s.spec->draft));
    }
    SimulateResult scratch;
    scratch.config = s.engine.vllm;
    try {
        add_speculation(k, model, *s.draft_model, *s.spec, *s.draft_decode, scratch, layout ? &layout->scale_out : nullptr);
    } catch (const Error& e) {
        reject(s.row, Rejection::Memory, e.what());
        return false;
    }
    s.engine.vllm = scratch.config;
    s.row.serve.spec_method = space.spec_method;
    s.row.serve.spec_tokens = space.spec_tokens;
    if (s.spec->method == SpecMethod::Draft)
        s.row.serve.spec_draft = s.draft_model->source.repo_id.empty() ? s.draft_model->name : s.draft_model->source.repo_id;
    return true;
}

// The engine configuration for `knobs` (default, latency, throughput), or a
// rejection in row (reject).
void configure(SloSetup& s, const SloSpace& space, ServeKnobs so, const ModelSpec& model, const Gpu& gpu, const Workload& w,
               const std::string& source, const Efficiency& efficiency) {
    const bool sglang = so.sglang();
    std::int64_t max_model_len = 0;
    try {
        SimulateResult scratch;
        std::string pool;
        // The defaults first: the other settings are stated against them.
        SchedulerConfig v;
        SglangConfig g;
        if (sglang) g = sglang_config(so, model, gpu, scratch);
        else v = engine_config(so, model, gpu, max_model_len, pool);
        const std::int64_t seqs = sglang ? g.max_running_requests : v.max_num_seqs;
        const std::int64_t tokens = sglang ? g.chunked_prefill_size : v.max_num_batched_tokens;
        // The knobs are per DP rank; SGLang's flags are the server's totals,
        // which it divides over the ranks (sglang_config).
        const std::int64_t totals = sglang ? std::max<std::int64_t>(1, so.layout.dp) : 1;
        if (s.row.knobs == "latency") {
            so.max_num_seqs = (seqs > kLatencySeqs ? kLatencySeqs : std::max<std::int64_t>(1, seqs / 2)) * totals;
            so.max_num_batched_tokens = std::min(tokens, kLatencyTokens) * totals;
        }
        if (s.row.knobs == "throughput") so.max_num_batched_tokens = 2 * tokens * totals;
        if (s.row.knobs != "default") {
            if (sglang) g = sglang_config(so, model, gpu, scratch);
            else v = engine_config(so, model, gpu, max_model_len, pool);
        }
        if (sglang) max_model_len = scratch.max_model_len;
        refuse_long_requests(w, max_model_len, source, sglang);
        s.engine.sglang = sglang;
        s.engine.vllm = v;
        s.engine.sglang_config = g;
        s.row.serve.batch = sglang ? g.max_running_requests : v.max_num_seqs;
        s.row.serve.max_num_batched_tokens = sglang ? g.chunked_prefill_size : v.max_num_batched_tokens;
    } catch (const Error& e) {
        reject(s.row, Rejection::Memory, e.what());
        return;
    }
    // SGLang's --tp counts every GPU of a DP attention layout; attention is split over tp / dp.
    const std::int64_t dp = so.layout.dp;
    const std::int64_t attention_tp = sglang && dp > 1 ? so.tp / dp : so.tp;
    const CostModelInputs in{&model, gpu, so.weights, so.kv_dtype, attention_tp, efficiency, std::nullopt};
    std::optional<ExpertLayoutInputs> layout;
    if (dp > 1) {
        // DP attention + EP within one node (simulate --dp N --enable-expert-parallel;
        // SGLang: --tp N --dp N --ep N).
        ScaleOutInputs si;
        si.tp = so.tp;
        si.dp = dp;
        if (sglang) {
            si.rules = ScaleOutRules::Sglang;
            si.ep = so.layout.ep;
        } else {
            si.enable_expert_parallel = true;
        }
        // One node: every GPU on the scale-up link; several: the NIC between them (simulate --nodes).
        const bool nodes = so.nodes.nodes > 1;
        layout = ExpertLayoutInputs{plan_scale_out(model, si), 1.0, so.all_to_all, nodes ? so.nodes.gpus_per_node : 0, nodes ? so.nodes.nic : Nic{}};
        if (so.two_batch_overlap) set_two_batch_overlap(*layout, sglang);  // --two-batch-overlap: the engine's micro-batches
        s.cost = std::make_unique<CostModel>(make_cost_model(in, *layout));
        s.row.serve.nodes = nodes ? so.nodes.nodes : 1;
        s.row.serve.two_batch_overlap = so.two_batch_overlap;
        s.engine.dp = dp;
        s.engine.dp_price = dp_step_pricer(*s.cost);
    } else {
        s.cost = std::make_unique<CostModel>(make_cost_model(in));
    }
    if (s.cost->flops_per_s <= 0) {
        reject(s.row, Rejection::Device, "no FLOP/s figure for this device: prefill cannot be priced");
        return;
    }
    if (dp <= 1) {
        s.engine.price = step_pricer(*s.cost);
        if (!sglang) s.engine.decode = decode_pricer(*s.cost);
    }
    if (so.pp > 1) {
        s.stage_costs = std::make_unique<std::vector<CostModel>>(stage_cost_models(in, so.pp));
        s.engine.stages = stage_pricers(*s.stage_costs);
    }
    if (space.spec && !add_proposer(s, space, so, model, in, layout)) return;
    s.row.serve.gpu = gpu.id;
    s.row.serve.tp = attention_tp;
    s.row.serve.pp = so.pp;
    s.row.serve.attention_dp = std::max<std::int64_t>(1, dp);
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

// DP attention + EP on 2, 4 and 8 GPUs of one node (TP 1 per rank): vLLM's
// --data-parallel-size N --enable-expert-parallel, SGLang's --tp N --dp N
// --ep N; for a mixture-of-experts model whose experts EP divides, on a
// device whose interconnect times the all-to-alls: the layouts the analytic
// search tries (core/speed/recommend.cpp, expert_layout_sizes), simulated as
// lockstep DP ranks (simulate --dp).
// With --max-nodes N, also 2, 4, 8 and 16 whole nodes up to N: DP = EP = the
// nodes' GPUs, their all-to-all over the NIC between nodes.
std::vector<Layout> expert_layouts(const ModelSpec& model, const Gpu& gpu, Engine engine, std::int64_t max_gpus, const NodeSpan& span) {
    std::vector<Layout> out;
    if ((engine != Engine::Vllm && engine != Engine::Sglang) || model.experts <= 0 || gpu.interconnect_bytes_per_s <= 0) return out;
    std::vector<std::pair<std::int64_t, std::int64_t>> sizes;  // GPUs, nodes
    for (std::int64_t g : {2, 4, 8})
        if (g <= max_gpus) sizes.push_back({g, 1});
    const std::int64_t per_node = span.gpus_per_node > 0 ? span.gpus_per_node : default_gpus_per_node(gpu.interconnect);
    for (std::int64_t n : {2, 4, 8, 16})
        if (n <= span.max_nodes) sizes.push_back({checked_mul(per_node, n, "GPUs of a layout"), n});
    for (const auto& [g, nodes] : sizes) {
        ScaleOutInputs si;
        si.dp = g;
        if (engine == Engine::Sglang) {
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
std::vector<Layout> layouts(const ModelSpec& model, const Gpu& gpu, Engine engine, std::int64_t max_gpus,
                            const std::optional<std::vector<std::int64_t>>& listed, const NodeSpan& span) {
    const std::vector<std::int64_t> tps = tp_degrees(model, max_gpus);
    const std::int64_t widest = tps.empty() ? 0 : tps.back();
    const bool pipelines = engine == Engine::Vllm && gpu.interconnect_bytes_per_s > 0;
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
// defaults, or a rejection in row (reject). A side is TP instances, or
// DP attention + EP groups (--data-parallel-size N --enable-expert-parallel,
// TP 1 a rank) where its dp is above 1, as `simulate --prefill-dp
// --decode-dp` runs them.
void configure_pd(SloSetup& s, const ServeKnobs& so, const ModelSpec& model, const Gpu& gpu, const Workload& w, const std::string& source,
                  const std::string& link_flag, const Efficiency& efficiency) {
    auto side_options = [&so](std::int64_t tp, std::int64_t dp) {
        ServeKnobs side = so;
        side.tp = tp;
        side.layout.tp = tp;
        side.layout.dp = dp;
        side.layout.enable_expert_parallel = dp > 1;
        return side;
    };
    const char* side = "prefill pool: ";  // which pool a refusal is about
    try {
        s.prefill_side = std::make_unique<PdSide>(pd_side(side_options(s.row.prefill_tp, s.row.prefill_dp), model, gpu, efficiency));
        side = "decode pool: ";
        s.decode_side = std::make_unique<PdSide>(pd_side(side_options(s.row.tp, s.row.dp), model, gpu, efficiency));
        side = "";
        refuse_long_requests(w, std::min(s.prefill_side->max_model_len, s.decode_side->max_model_len), source, false);
    } catch (const Error& e) {
        reject(s.row, Rejection::Memory, side + std::string(e.what()));
        return;
    }
    const PdSide& pre = *s.prefill_side;
    const PdSide& dec = *s.decode_side;
    if (dec.cost.flops_per_s <= 0) {
        reject(s.row, Rejection::Device, "no FLOP/s figure for this device: prefill cannot be priced");
        return;
    }
    s.row.kv_link = link_for(link_flag, gpu, s.row.gpus_per_replica());
    DisaggUnit u;
    try {
        // Each decode GPU pulls the KV its attention ranks hold: the DP rank's TP shard.
        u.pools = disagg_config(model, s.row.prefill_replicas, s.row.decode_replicas, parse_kv_link(s.row.kv_link, gpu, gpu), dec.kv_tp(),
                                so.kv_dtype, false);
    } catch (const Error& e) {
        reject(s.row, Rejection::Link, e.what());
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
void add_units(std::vector<SloSetup>& out, const SloSpace& space, const ServeKnobs& so, const KvDtypeChoice& kv, const WeightsChoice& weights,
               const ModelSpec& model, const Gpu& gpu, const Workload& w, const std::string& source, const Efficiency& efficiency) {
    std::vector<UnitSide> sides;
    for (std::int64_t tp : tp_degrees(model, space.max_gpus)) sides.push_back({tp, 1});
    for (const Layout& l : expert_layouts(model, gpu, space.base.engine, space.max_gpus, NodeSpan{}))
        if (l.nodes == 1) sides.push_back({1, l.dp});
    for (const UnitSide& pre : sides)
        for (const UnitSide& dec : sides) {
            if ((pre.dp > 1) != (dec.dp > 1)) continue;
            for (std::int64_t p = 1; p <= kMaxInstancesPerSide; ++p)
                for (std::int64_t d = 1; d <= kMaxInstancesPerSide; ++d) {
                    if (std::gcd(p, d) != 1 || p * pre.gpus() + d * dec.gpus() > kMaxUnitGpus) continue;
                    SloSetup s = named(gpu, dec.tp, 1, "default", kv.flag, weights.flag, dec.dp);
                    s.row.prefill_tp = pre.tp;
                    s.row.prefill_dp = pre.dp;
                    s.row.prefill_replicas = p;
                    s.row.decode_replicas = d;
                    configure_pd(s, so, model, gpu, w, source, space.kv_link, efficiency);
                    out.push_back(std::move(s));
                }
        }
}

// The knobs of one candidate: the space's base with its layout, dtypes and
// two-batch overlap (as `simulate --tp --pp --dp --enable-expert-parallel
// --nodes --kv-dtype --weights-dtype` would set them).
ServeKnobs candidate_knobs(const SloSpace& space, const Layout& l, const KvDtypeChoice& kv, const WeightsChoice& weights) {
    ServeKnobs k = space.base;
    k.tp = l.tp;
    k.pp = l.pp;
    if (l.dp > 1 && k.sglang()) {  // --tp N --dp N --ep N: N GPUs in all
        k.tp = l.dp;
        k.layout.dp = l.dp;
        k.layout.ep = l.dp;
    } else if (l.dp > 1) {
        k.layout.dp = l.dp;
        k.layout.enable_expert_parallel = true;
    }
    k.layout.tp = k.tp;
    if (l.nodes > 1) {
        k.nodes.nodes = l.nodes;
        k.nodes.gpus_per_node = l.dp / l.nodes;
        k.nodes.nic = space.span.nic;
        k.nodes.nic_given = space.span.nic.id != "ib-ndr";
    }
    k.two_batch_overlap = l.dp > 1 && space.two_batch_overlap;
    return with_dtypes(k, kv, weights);
}

}  // namespace

ServeKnobs with_dtypes(ServeKnobs k, const KvDtypeChoice& kv, const WeightsChoice& weights) {
    k.kv_dtype = kv.dtype;
    k.weights = weights.weights;
    k.stored_weights = weights.stored;
    return k;
}

std::vector<SloSetup> slo_candidates(const SloSpace& space, const ModelSpec& model, const std::vector<Gpu>& gpus, const Workload& w,
                                     const std::string& source, const Efficiency& efficiency) {
    std::vector<SloSetup> out;
    for (const Gpu& gpu : gpus)
        for (const Layout& l : layouts(model, gpu, space.base.engine, space.max_gpus, space.pp, space.span)) {
            for (const KvDtypeChoice& kv : space.kv_dtypes)
                for (const WeightsChoice& weights : space.formats)
                    for (const char* knobs : {"default", "latency", "throughput"}) {
                        if (l.pp > 1 && space.spec) continue;  // a pipeline does not speculate in the simulator
                        SloSetup s = named(gpu, l.tp, l.pp, knobs, kv.flag, weights.flag, l.dp);
                        configure(s, space, candidate_knobs(space, l, kv, weights), model, gpu, w, source, efficiency);
                        out.push_back(std::move(s));
                    }
        }
    if (space.disaggregated)
        for (const Gpu& gpu : gpus)
            for (const KvDtypeChoice& kv : space.kv_dtypes)
                for (const WeightsChoice& weights : space.formats)
                    add_units(out, space, with_dtypes(space.base, kv, weights), kv, weights, model, gpu, w, source, efficiency);
    for (std::size_t i = 0; i < out.size(); ++i) out[i].row.order = i;
    return out;
}

// Best first: priced before unpriced, then cheaper per hour, fewer GPUs,
// more headroom (the fleet's capacity, replicas x rate per replica: two
// replicas of one GPU against one unit of two compare as fleets);
// candidate order breaks the remaining ties.
bool ranks_before(const SloCandidate& a, const SloCandidate& b) {
    if (a.fleet.usd_per_hour.has_value() != b.fleet.usd_per_hour.has_value()) return a.fleet.usd_per_hour.has_value();
    if (a.fleet.usd_per_hour && *a.fleet.usd_per_hour != *b.fleet.usd_per_hour) return *a.fleet.usd_per_hour < *b.fleet.usd_per_hour;
    if (a.fleet.gpus != b.fleet.gpus) return a.fleet.gpus < b.fleet.gpus;
    return static_cast<double>(a.fleet.replicas) * a.outcome.max_rate_rps > static_cast<double>(b.fleet.replicas) * b.outcome.max_rate_rps;
}

}  // namespace kvplan
