#include "core/speed/recommend.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/capacity.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/weights.hpp"
#include "core/speed/roofline.hpp"

namespace kvplan {

namespace {

// The TP degrees tried on every device: 1, 2, 4, 8 up to --max-gpus, those the
// model's heads split into (check_tp), and with --num-gpus those that divide it,
// so that TP x DP fills the GPUs exactly.
std::vector<std::int64_t> tp_degrees(const ModelSpec& spec, const RecommendInputs& in) {
    std::vector<std::int64_t> out;
    for (std::int64_t tp : {1, 2, 4, 8}) {
        if (tp > in.max_gpus || (in.num_gpus > 0 && in.num_gpus % tp != 0)) continue;
        try {
            check_tp(spec, tp);
        } catch (const Error&) {
            continue;  // the model's heads do not split this way
        }
        out.push_back(tp);
    }
    return out;
}

// A DP + EP layout's size: its GPUs and the nodes they span.
struct LayoutSize {
    std::int64_t gpus = 0, nodes = 1;
};

// DP + EP layouts tried for a mixture-of-experts model: 2, 4 and 8 GPUs (one
// node) up to --max-gpus, then 2, 4, 8 and 16 whole nodes up to --max-nodes
// (the SLO search's sizes, core/plan/slo_candidates.cpp), each dividing
// --num-gpus when it is given.
std::vector<LayoutSize> expert_layout_sizes(const ModelSpec& spec, const RecommendInputs& in, const Gpu& gpu) {
    std::vector<LayoutSize> out;
    if (spec.experts <= 0 || in.all_to_all.empty()) return out;
    const auto fits = [&](std::int64_t g) { return in.num_gpus == 0 || in.num_gpus % g == 0; };
    for (std::int64_t g : {2, 4, 8})
        if (g <= in.max_gpus && fits(g)) out.push_back({g, 1});
    const std::int64_t per_node = in.gpus_per_node > 0 ? in.gpus_per_node : default_gpus_per_node(gpu.interconnect);
    for (std::int64_t n : {2, 4, 8, 16}) {
        const std::int64_t g = checked_mul(per_node, n, "GPUs of a layout");
        if (n <= in.max_nodes && fits(g)) out.push_back({g, n});
    }
    return out;
}

// Memory for one replica: vLLM's accounting at max_model_len = context, weights in the chosen format.
CapacityPlan replica_memory(const RecommendInputs& in, const Gpu& gpu, std::int64_t tp, const WeightSizing& weights) {
    CapacityInputs cap;
    cap.gpu = gpu;
    cap.engine = Engine::Vllm;
    cap.tp = tp;
    cap.contexts = {in.context};
    cap.max_model_len = in.context;
    cap.kv_dtype = in.kv_dtype;
    cap.longest_lengths = false;  // only the rows are read
    if (!in.weights.as_checkpoint) cap.weights_bytes = (weights.bytes + tp - 1) / tp;
    return plan_capacity(*in.model, cap);
}

// vLLM's DP attention + EP over `gpus` GPUs of one node (--tensor-parallel-size 1
// --data-parallel-size gpus --enable-expert-parallel), or nullopt where the
// layout cannot run (EP must divide the experts): its memory, with each DP
// rank's own pool, and its step (docs/scale-out.md).
struct ExpertLayoutPlan {
    CapacityPlan memory;
    CostModel cost;
    ExpertLayoutInputs layout;
};

std::optional<ExpertLayoutPlan> expert_layout(const RecommendInputs& in, const Gpu& gpu, LayoutSize size, const WeightSizing& weights) {
    ScaleOutInputs si;
    si.rules = ScaleOutRules::Vllm;
    si.tp = 1;
    si.dp = size.gpus;
    si.enable_expert_parallel = true;
    ScaleOut so;
    try {
        so = plan_scale_out(*in.model, si);
    } catch (const Error&) {
        return std::nullopt;  // EP does not divide the experts, or the model has none
    }
    CapacityInputs cap;
    cap.gpu = gpu;
    cap.engine = Engine::Vllm;
    cap.tp = 1;
    cap.contexts = {in.context};
    cap.max_model_len = in.context;
    cap.kv_dtype = in.kv_dtype;
    cap.longest_lengths = false;
    cap.scale_out = si;
    if (!in.weights.as_checkpoint)
        cap.weights_bytes =
            stage_weights_scaled(weights, *in.model, pipeline_stages(static_cast<std::int64_t>(in.model->layers.size()), 1).at(0), 1, so).total_bytes;
    const CostModelInputs cost_in{in.model, gpu, in.weights, in.kv_dtype, so.attention_tp, in.efficiency, std::nullopt};
    const ExpertLayoutInputs layout{so, 1.0, in.all_to_all, size.nodes > 1 ? size.gpus / size.nodes : 0, size.nodes > 1 ? in.nic : Nic{}};
    return ExpertLayoutPlan{plan_capacity(*in.model, cap), make_cost_model(cost_in, layout), layout};
}

// TensorRT-LLM sizes its pool as a fraction of the memory free after weights
// and buffers (KvCacheConfig.free_gpu_memory_fraction); this fraction gives
// the pool vLLM's accounting planned, under the same overhead estimate.
double trtllm_fraction(const MemoryBudget& b) {
    const std::int64_t free = b.total_bytes - b.weights_bytes - b.overhead_bytes;
    if (free <= 0 || b.kv_pool_bytes <= 0) return b.mem_fraction;
    return std::min(1.0, static_cast<double>(b.kv_pool_bytes) / static_cast<double>(free));
}

// --spec-method: one replica's proposer on its device and layout.
struct Proposer {
    CostModel draft;             // one draft pass
    std::int64_t k = 1;          // drafts a step
    double expected_tokens = 1;  // E: tokens a sequence keeps a step
    std::int64_t weights_per_gpu = 0, kv_bytes_per_token = 0;
};

// The proposer `in.spec` describes for `target` (under `layout`, an MTP or
// EAGLE head's routed experts over EP); Error(Usage) from check_tp when a
// draft model's heads do not split over the target's TP.
Proposer make_proposer(const RecommendInputs& in, const CostModelInputs& target, const ExpertLayoutInputs* layout, Dtype kv_dtype) {
    const RecommendSpec& s = *in.spec;
    Proposer p;
    p.draft = make_proposer_model(s.method, s.draft_model, target, layout);
    p.k = s.k;
    p.expected_tokens = expected_tokens_per_step(s.rates);
    p.weights_per_gpu = proposer_weight_bytes_per_gpu(s.method, *in.model, s.draft_model, target.tp, layout ? &layout->scale_out : nullptr);
    p.kv_bytes_per_token = proposer_kv_bytes_per_token(s.method, *in.model, s.draft_model, target.tp, kv_dtype);
    return p;
}

// The requests a replica's pool holds once the proposer's weights are out
// of it and its KV shares the blocks, the rule the SLO search's simulator
// applies to vLLM's blocks (core/plan/engine_setup.cpp, add_speculation): the
// pool's tokens scale by (pool - weights) / pool x target bytes per token /
// (target + proposer bytes per token).
std::int64_t requests_beside(const CapacityPlan& plan, std::int64_t requests, const Proposer& p) {
    const double pool = static_cast<double>(plan.budget.kv_pool_bytes), per_token = static_cast<double>(plan.kv_bytes_per_token_per_gpu);
    if (pool <= 0 || per_token <= 0) return requests;
    const double left = pool - static_cast<double>(p.weights_per_gpu);
    if (left <= 0) return 0;
    return static_cast<std::int64_t>(
        std::floor(static_cast<double>(requests) * left / pool * per_token / (per_token + static_cast<double>(p.kv_bytes_per_token))));
}

// Seconds per output token of one sequence at `batch`: a decode step, or a
// speculative step (K drafts, one verify) over the E tokens it keeps.
double per_token_s(const CostModel& m, const Proposer* p, std::int64_t batch, std::int64_t context) {
    if (!p) return decode_step(m, batch, context).total_s;
    return spec_step(m, p->draft, p->k, batch, context).total_s / p->expected_tokens;
}

// One replica of `tp` x `attention_dp` GPUs at batch 1 (the best TPOT it can
// reach), and which targets it misses; with a proposer, speculative.
Candidate replica(const RecommendInputs& in, const CostModel& m, const CapacityPlan& plan, std::int64_t tp, std::int64_t prompt,
                  std::int64_t attention_dp = 1, const Proposer* p = nullptr) {
    Candidate c;
    c.gpu = plan.gpu.id;
    c.tp = tp;
    c.attention_dp = attention_dp;
    c.dp = in.num_gpus > 0 ? in.num_gpus / c.replica_gpus() : 1;
    c.max_requests = plan.rows.at(0).max_requests_replica;  // = max_requests without DP attention
    if (p) {
        c.max_requests = requests_beside(plan, c.max_requests, *p);
        c.spec_method = spec_method_name(in.spec->method);
        c.spec_tokens = in.spec->k;
        c.spec_draft = in.spec->draft_label;
    }
    c.ttft_s = prefill_step(m, 1, prompt).total_s;
    c.tpot_s = per_token_s(m, p, 1, in.context);
    c.tokens_per_s_per_gpu = 1.0 / c.tpot_s / static_cast<double>(c.replica_gpus());
    c.tokens_per_s = static_cast<double>(c.dp) / c.tpot_s;
    if (c.max_requests < 1) c.missed.push_back(Target::Memory);
    else {
        if (c.ttft_s > in.ttft_s) c.missed.push_back(Target::Ttft);
        if (c.tpot_s > in.tpot_s) c.missed.push_back(Target::Tpot);
    }
    c.max_model_len = in.context;
    c.kv_dtype = plan.kv_dtype;
    c.vllm_mem_fraction = plan.budget.mem_fraction;
    c.sglang_mem_fraction = default_mem_fraction(Engine::Sglang, c.tp * c.attention_dp);  // SGLang's --tp counts every GPU
    c.trtllm_free_fraction = trtllm_fraction(plan.budget);
    return c;
}

// The largest batch that still meets the TPOT target (step time grows with
// the batch), capped by memory, and the figures at that batch. Throughput of
// DP replicas is dp x one replica's; latency is one replica's.
void fill_batch(Candidate& c, const RecommendInputs& in, const CostModel& m, std::int64_t prompt, const Proposer* p = nullptr) {
    std::int64_t lo = 1, hi = c.max_requests;
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo + 1) / 2;
        if (per_token_s(m, p, mid, in.context) <= in.tpot_s) lo = mid;
        else hi = mid - 1;
    }
    c.batch = lo;
    c.tpot_s = per_token_s(m, p, lo, in.context);
    const double replica_tokens_per_s = static_cast<double>(lo) / c.tpot_s;
    c.tokens_per_s = static_cast<double>(c.dp) * replica_tokens_per_s;
    c.tokens_per_s_per_gpu = replica_tokens_per_s / static_cast<double>(c.replica_gpus());
    // Room for one whole prompt beside a decode token for every sequence, so
    // that a prompt is prefilled in one step, as TTFT assumes (vLLM and SGLang
    // otherwise split it into chunks of this many tokens).
    // Per engine core: with DP attention each rank schedules its own share of the batch.
    c.max_num_batched_tokens = checked_add(prompt, c.rank_batch(), "max_num_batched_tokens");
    if (auto p = in.prices.find(c.gpu); p != in.prices.end()) c.usd_per_million_tokens = usd_per_million_tokens(p->second, c.gpus(), c.tokens_per_s);
}

// Best first: cheapest per million tokens when priced, else most tokens/s per GPU; then fewer GPUs, then smaller TP.
bool better(const Candidate& a, const Candidate& b) {
    if (a.usd_per_million_tokens.has_value() != b.usd_per_million_tokens.has_value()) return a.usd_per_million_tokens.has_value();
    if (a.usd_per_million_tokens && *a.usd_per_million_tokens != *b.usd_per_million_tokens)
        return *a.usd_per_million_tokens < *b.usd_per_million_tokens;
    if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
    if (a.gpus() != b.gpus()) return a.gpus() < b.gpus();
    return a.tp < b.tp;
}

// Closest first: those that fit, then fewer targets missed, then the smaller
// worst ratio of figure to target.
bool closer(const Candidate& a, const Candidate& b, const RecommendInputs& in) {
    const bool a_fits = a.missed.front() != Target::Memory, b_fits = b.missed.front() != Target::Memory;
    if (a_fits != b_fits) return a_fits;
    if (a.missed.size() != b.missed.size()) return a.missed.size() < b.missed.size();
    auto worst = [&](const Candidate& c) { return std::max(c.ttft_s / in.ttft_s, c.tpot_s / in.tpot_s); };
    return worst(a) < worst(b);
}

std::string binding(const Recommendation& r, bool ttft_met, bool tpot_met) {
    if (r.fitting == 0) return "memory";
    if (!ttft_met && !tpot_met) return "both";
    if (!ttft_met) return "ttft";
    if (!tpot_met) return "tpot";
    return "separately";
}

}  // namespace

Recommendation recommend(const RecommendInputs& in) {
    if (!(in.ttft_s > 0) || !(in.tpot_s > 0)) usage_error("--ttft and --tpot must be positive seconds");
    if (in.context < 2) usage_error("--context must be at least 2 tokens");
    const std::int64_t output = std::min(in.output, in.context - 1);
    const std::int64_t prompt = in.prompt > 0 ? in.prompt : in.context - output;
    if (prompt > in.context) usage_error("--prompt (" + std::to_string(prompt) + ") exceeds --context (" + std::to_string(in.context) + ")");

    Recommendation out;
    const ModelSpec& spec = *in.model;
    const WeightSizing weights = size_weights_in(spec, in.weights);
    const std::vector<std::int64_t> degrees = tp_degrees(spec, in);
    bool ttft_met = false, tpot_met = false;
    std::string skipped, unsplit;
    for (const Gpu& gpu : in.gpus) {
        bool chosen = false;  // this device has its candidate: the smallest TP that meets both targets
        for (std::int64_t tp : degrees) {
            const CostModel m = make_cost_model(CostModelInputs{in.model, gpu, in.weights, in.kv_dtype, tp, in.efficiency, std::nullopt});
            if (m.flops_per_s <= 0) {
                skipped += (skipped.empty() ? "" : ", ") + gpu.id;
                break;
            }
            const CapacityPlan plan = replica_memory(in, gpu, tp, weights);
            std::optional<Proposer> p;
            if (in.spec) {
                try {
                    p = make_proposer(in, CostModelInputs{in.model, gpu, in.weights, in.kv_dtype, tp, in.efficiency, std::nullopt}, nullptr,
                                      plan.kv_dtype);
                } catch (const Error&) {
                    unsplit += (unsplit.empty() ? "" : ", ") + std::to_string(tp);
                    continue;  // the draft model's heads do not split over this TP
                }
            }
            ++out.configurations;
            Candidate c = replica(in, m, plan, tp, prompt, 1, p ? &*p : nullptr);
            if (c.max_requests < 1) {
                out.rejected.push_back(c);
                continue;
            }
            ++out.fitting;
            if (!out.best_ttft || c.ttft_s < out.best_ttft->ttft_s) out.best_ttft = c;
            if (!out.best_tpot || c.tpot_s < out.best_tpot->tpot_s) out.best_tpot = c;
            ttft_met = ttft_met || c.ttft_s <= in.ttft_s;
            tpot_met = tpot_met || c.tpot_s <= in.tpot_s;
            if (!c.missed.empty()) out.rejected.push_back(c);
            else if (chosen) ++out.larger_tp_meeting;
            else {
                fill_batch(c, in, m, prompt, p ? &*p : nullptr);
                out.candidates.push_back(c);
                chosen = true;
            }
        }
        // Mixture-of-experts models: the smallest DP + EP layout that meets both targets is a second candidate.
        bool ep_chosen = false;
        // A separate draft model is not priced under a layout (as in roofline and simulate).
        const bool layouts = !in.spec || in.spec->method != SpecMethod::Draft;
        for (const LayoutSize& size : layouts ? expert_layout_sizes(spec, in, gpu) : std::vector<LayoutSize>{}) {
            const std::optional<ExpertLayoutPlan> p = expert_layout(in, gpu, size, weights);
            if (!p || p->cost.flops_per_s <= 0) continue;
            std::optional<Proposer> head;
            if (in.spec)
                head = make_proposer(
                    in, CostModelInputs{in.model, gpu, in.weights, in.kv_dtype, p->layout.scale_out.attention_tp, in.efficiency, std::nullopt},
                    &p->layout, p->memory.kv_dtype);
            ++out.configurations;
            Candidate c = replica(in, p->cost, p->memory, 1, prompt, size.gpus, head ? &*head : nullptr);
            c.nodes = size.nodes;
            if (c.max_requests < 1) {
                out.rejected.push_back(c);
                continue;
            }
            ++out.fitting;
            if (!out.best_ttft || c.ttft_s < out.best_ttft->ttft_s) out.best_ttft = c;
            if (!out.best_tpot || c.tpot_s < out.best_tpot->tpot_s) out.best_tpot = c;
            ttft_met = ttft_met || c.ttft_s <= in.ttft_s;
            tpot_met = tpot_met || c.tpot_s <= in.tpot_s;
            if (!c.missed.empty()) out.rejected.push_back(c);
            else if (ep_chosen) ++out.larger_tp_meeting;
            else {
                fill_batch(c, in, p->cost, prompt, head ? &*head : nullptr);
                out.candidates.push_back(c);
                ep_chosen = true;
            }
        }
    }

    if (!skipped.empty()) out.notes.push_back("skipped for want of a FLOP/s figure (no TTFT): " + skipped);
    if (!unsplit.empty()) out.notes.push_back("the draft model's heads do not split over TP " + unsplit + ": not tried");
    if (in.spec)
        out.notes.push_back(std::string("speculative decoding (") + spec_method_name(in.spec->method) + ", K " + std::to_string(in.spec->k) +
                            "): TPOT is a speculative step over the tokens a sequence keeps a step; the proposer's weights and KV come "
                            "out of the pool; TTFT is the target's prefill, as roofline prices it");
    std::stable_sort(out.candidates.begin(), out.candidates.end(), better);
    std::stable_sort(out.rejected.begin(), out.rejected.end(), [&](const Candidate& a, const Candidate& b) { return closer(a, b, in); });
    if (out.candidates.empty()) out.binding = binding(out, ttft_met, tpot_met);
    return out;
}

}  // namespace kvplan
