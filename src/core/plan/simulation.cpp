// The three shapes of a simulation (core/plan/simulation.hpp). Moved from
// the command line (cli/cmd_simulate.cpp), where they read flag strings.
#include "core/plan/simulation.hpp"

#include <algorithm>
#include <vector>

#include "core/checked.hpp"
#include "core/sim/disagg.hpp"
#include "core/sim/dp_group.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/sglang_scheduler.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

namespace {

const char* router_name(Router router) {
    return router == Router::LeastLoaded ? "least-loaded" : "round-robin";
}

// A side's report: its replicas, and with DP groups their engine cores,
// taken from the front of `ranks` (the run's cores, prefill side first).
DisaggPool pool_report(const PdSide& side, std::vector<ReplicaStats> stats, std::vector<ReplicaStats>& ranks) {
    DisaggPool p{side.gpu.name, side.tp, side.config, std::move(stats), 1, 1, {}};
    if (side.layout) {
        p.dp = side.layout->dp;
        p.ep = side.layout->ep;
    }
    // A replica of one engine is one core.
    const std::size_t cores = std::min(ranks.size(), p.stats.size() * static_cast<std::size_t>(p.dp));
    if (p.dp > 1) p.dp_ranks.assign(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(cores));
    ranks.erase(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(cores));
    return p;
}

}  // namespace

void simulate_replicas(const ServeKnobs& k, const RunSetup& s, const Workload& w, const SglangConfig& sglang, SimulateResult& r) {
    const CostModelInputs in{s.model, s.gpu, k.weights, k.kv_dtype, k.tp, s.efficiency, std::nullopt};
    const CostModel cost = make_cost_model(in);
    require_flops(cost, s.gpu);
    const StepPricer price = step_pricer(cost);
    // Kept alive for the run: the drafter's pricer points into them.
    ModelSpec draft_model;
    std::optional<SpecInputs> spec;
    std::optional<DecodePricer> draft_decode;
    if (s.spec) spec = s.spec(in, nullptr, draft_model);
    if (spec) {
        draft_decode = decode_pricer(spec->draft);
        add_speculation(k, *s.model, draft_model, *spec, *draft_decode, r);
    }
    r.router = router_name(s.cluster.router);
    if (k.sglang()) {
        r.run = s.cluster.replicas > 1 ? simulate_sglang_cluster(w, sglang, s.cluster, price, s.check_invariants)
                                       : simulate_sglang(w, sglang, price, s.check_invariants);
        return;
    }
    const DecodePricer decode = decode_pricer(cost);
    const std::vector<CostModel> stage_costs = k.pp > 1 ? stage_cost_models(in, k.pp) : std::vector<CostModel>{};
    const StagePricers stages = stage_pricers(stage_costs);
    r.run = simulate_cluster(w, r.config, s.cluster, price, decode, s.check_invariants, stages);
    r.pp = k.pp;
}

void simulate_layout(const ServeKnobs& k, const RunSetup& s, const ScaleOut& so, const Workload& w, const SglangConfig& sglang, SimulateResult& r) {
    const ExpertLayoutInputs li = expert_layout_inputs(k, so, s.gpu);
    const CostModelInputs target{s.model, s.gpu, k.weights, k.kv_dtype, so.attention_tp, s.efficiency, std::nullopt};
    const CostModel cost = make_cost_model(target, li);
    require_flops(cost, s.gpu);
    // Speculation: the MTP or EAGLE head under the same layout; its pass on
    // one rank's batch is priced as if every rank drafted as many sequences
    // (the ranks draft in lockstep too; an upper bound on the experts' tokens).
    // Kept alive for the run: the pricer points into them.
    ModelSpec draft_model;
    std::optional<SpecInputs> spec;
    DecodePricer draft_decode;
    if (s.spec) spec = s.spec(target, &li, draft_model);
    if (spec) {
        draft_decode = [&d = spec->draft, dp = so.dp](std::int64_t batch, std::int64_t context_sum) -> std::optional<double> {
            return decode_step(d, checked_mul(batch, dp, "drafting sequences"), batch > 0 ? context_sum / batch : 0).total_s;
        };
        add_speculation(k, *s.model, draft_model, *spec, draft_decode, r, &so);
    }
    const bool sg = k.sglang();
    if (so.dp > 1) {
        const DpStepPricer price = dp_step_pricer(cost);
        r.run = sg ? simulate_sglang_dp_cluster(w, sglang, so.dp, s.cluster, price, s.check_invariants)
                   : simulate_dp_cluster(w, r.config, so.dp, s.cluster, price, s.check_invariants);
    } else {
        // Expert parallelism over one engine's TP ranks: its one batch.
        const StepPricer price = [&cost](const std::vector<SeqWork>& seqs) { return dp_mixed_step(cost, {&seqs}).total_s; };
        r.run = sg ? simulate_sglang_cluster(w, sglang, s.cluster, price, s.check_invariants)
                   : simulate_cluster(w, r.config, s.cluster, price, DecodePricer{}, s.check_invariants);
    }
    DpLayoutReport l;
    l.dp = so.dp;
    l.attention_tp = so.attention_tp;
    l.ep = so.ep;
    l.gpus = so.gpus;
    l.experts_per_gpu = so.experts_per_gpu;
    l.nodes = cost.layout.nodes;
    l.gpus_per_node = std::min(cost.layout.gpus_per_node, so.gpus);
    if (cost.layout.nodes > 1) l.nic = cost.layout.nic;
    l.expert_imbalance = li.expert_imbalance;
    l.sglang = sg;
    l.two_batch_overlap = k.two_batch_overlap;
    r.layout = l;
    r.router = router_name(s.cluster.router);
}

void simulate_pd(const ServeKnobs& k, const ModelSpec& model, const PdUnit& unit, Router router, const Workload& w, const std::string& source,
                 SimulateResult& r, bool check_invariants) {
    const PdSide& pre = unit.prefill;
    const PdSide& dec = unit.decode;
    // Each decode GPU pulls the KV its attention ranks hold: the DP rank's TP shard.
    DisaggConfig c = disagg_config(model, unit.prefill_replicas, unit.decode_replicas, unit.link, dec.layout ? dec.layout->attention_tp : dec.tp,
                                   k.kv_dtype, unit.layerwise);
    c.router = router;
    r.config = dec.config;
    r.max_model_len = std::min(pre.max_model_len, dec.max_model_len);
    r.pool_source = dec.pool_source;
    refuse_long_requests(w, r.max_model_len, source, false);
    DisaggRun run = simulate_disagg(w, pre.config, dec.config, c, pool_pricing(pre), pool_pricing(dec), check_invariants);
    DisaggReport d;
    std::vector<ReplicaStats> cores = run.run.dp_ranks;
    d.prefill = pool_report(pre, run.prefill, cores);
    d.decode = pool_report(dec, run.decode, cores);
    d.link = unit.link_name;
    d.link_bytes_per_s = c.link.bytes_per_s;
    d.link_latency_s = c.link.latency_s;
    d.layerwise = c.layerwise;
    d.kv_bytes_per_token_per_rank = c.kv_bytes_per_token_per_rank;
    d.transfer_s = distribution(run.transfer_s);
    r.disagg = std::move(d);
    r.run = std::move(run.run);
    r.router = router_name(router);
}

}  // namespace kvplan
