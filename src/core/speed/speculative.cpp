#include "core/speed/speculative.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/overhead.hpp"
#include "core/model/weights.hpp"

namespace kvplan {

const char* spec_method_name(SpecMethod method) {
    switch (method) {
        case SpecMethod::Mtp: return "mtp";
        case SpecMethod::Eagle: return "eagle";
        case SpecMethod::Draft: return "draft";
    }
    return "?";
}

double expected_tokens_per_step(const std::vector<double>& rates) {
    // Position i is kept only when every position before it was: the
    // probability of keeping it is the product of the conditional rates.
    double e = 1.0, kept = 1.0;
    for (double a : rates) {
        kept *= a;
        e += kept;
    }
    return e;
}

namespace {

CostModel draft_head(const CostModelInputs& target, const ExpertLayoutInputs* layout) {
    const auto build = [&](const CostModelInputs& in) { return layout ? make_cost_model(in, *layout) : make_cost_model(in); };
    const std::int64_t layers = std::max<std::int64_t>(1, static_cast<std::int64_t>(target.model->layers.size()));
    // One layer, without embedding and head: `kvplan measure`'s sample of 1.
    CostModelInputs one = target;
    one.sample_layers = 1;
    CostModel head = build(one);
    // The LM head is what the whole model costs beyond all its layers sampled.
    CostModelInputs body_in = target;
    body_in.sample_layers = layers;
    const CostModel body = build(body_in);
    const CostModel full = build(target);
    head.dense_weight_bytes += std::max(0.0, full.dense_weight_bytes - body.dense_weight_bytes);
    head.matmul_flops_per_token += std::max(0.0, full.matmul_flops_per_token - body.matmul_flops_per_token);
    head.step_overhead_s = 0;
    head.notes.clear();
    return head;
}

// A parameter tensor's share of the draft head (draft_head_weight_bytes): the
// per-layer tensors of one layer, the routed experts' apart.
struct HeadParts {
    std::int64_t experts = 0, rest = 0;
};

HeadParts draft_head_parts(const ModelSpec& target) {
    // The MoE layers: an expert tensor has layers x experts copies.
    std::int64_t moe_layers = 0;
    for (const ParamTensor& t : target.params)
        if (t.part == ParamPart::Experts && target.experts > 0) moe_layers = std::max(moe_layers, t.copies / target.experts);
    const std::int64_t layers = static_cast<std::int64_t>(target.layers.size());
    // One layer's copy of every per-layer tensor. With MoE layers the last
    // layer is one of them, so a dense MLP held by fewer than all layers
    // (DeepSeek's first_k_dense_replace) is not in it.
    ModelSpec experts = target, rest = target;
    experts.params.clear();
    rest.params.clear();
    experts.use_stored_weights = rest.use_stored_weights = false;  // the formula's tensors, not the checkpoint's files
    for (ParamTensor t : target.params) {
        if (t.part == ParamPart::Embedding || t.part == ParamPart::Head) continue;
        const bool expert_side = t.part == ParamPart::Experts || t.part == ParamPart::SharedExperts || t.part == ParamPart::Router;
        if (moe_layers > 0 && t.part == ParamPart::Mlp && t.copies < layers) continue;
        t.copies = expert_side && moe_layers > 0 ? std::max<std::int64_t>(1, t.copies / moe_layers) : 1;
        t.layers.clear();  // a head layer of its own, none of the target's
        (t.part == ParamPart::Experts ? experts : rest).params.push_back(t);
    }
    const std::int64_t projection = checked_mul(checked_mul(2, target.hidden, "draft head projection"), target.hidden, "draft head projection");
    HeadParts p;
    p.experts = experts.params.empty() ? 0 : size_weights(experts).bytes;
    p.rest = checked_add(rest.params.empty() ? 0 : size_weights(rest).bytes, bytes_for(projection, serving_dtype(target.checkpoint_dtype)),
                         "draft head weights");
    return p;
}

}  // namespace

CostModel make_draft_head_model(const CostModelInputs& target) {
    return draft_head(target, nullptr);
}

CostModel make_draft_head_model(const CostModelInputs& target, const ExpertLayoutInputs& layout) {
    return draft_head(target, &layout);
}

std::int64_t draft_head_weight_bytes(const ModelSpec& target) {
    const HeadParts p = draft_head_parts(target);
    return checked_add(p.experts, p.rest, "draft head weights");
}

std::int64_t draft_head_weight_bytes_per_gpu(const ModelSpec& target, const ScaleOut& layout) {
    const HeadParts p = draft_head_parts(target);
    return checked_add(ceil_div(p.experts, checked_mul(layout.ep, layout.expert_tp, "EP x expert TP")), ceil_div(p.rest, layout.attention_tp),
                       "draft head weights per GPU");
}

CostModel make_proposer_model(SpecMethod method, const ModelSpec* draft, const CostModelInputs& target, const ExpertLayoutInputs* layout) {
    if (method != SpecMethod::Draft) return layout ? make_draft_head_model(target, *layout) : make_draft_head_model(target);
    check_tp(*draft, target.tp);
    return make_draft_model(CostModelInputs{draft, target.gpu, WeightFormat{}, target.kv_dtype, target.tp, target.efficiency, std::nullopt});
}

std::int64_t proposer_weight_bytes_per_gpu(SpecMethod method, const ModelSpec& target, const ModelSpec* draft, std::int64_t tp,
                                           const ScaleOut* layout) {
    if (method == SpecMethod::Draft) return ceil_div(size_weights(*draft).bytes, tp);
    const std::int64_t head = layout ? draft_head_weight_bytes_per_gpu(target, *layout) : ceil_div(draft_head_weight_bytes(target), tp);
    // An MLA head keeps its own decode copy of kv_b_proj as the target's
    // layers do (vLLM's MLACommonImpl builds one per attention layer, the
    // MTP module's included): one layer's, priced on the last target layer.
    const auto layers = static_cast<std::int64_t>(target.layers.size());
    const std::optional<OverheadTerm> copy =
        layers > 0 ? mla_decode_copy_term(target, Engine::Vllm, layers - 1, 1, layout ? layout->attention_tp : tp) : std::nullopt;
    return copy ? checked_add(head, copy->bytes, "draft head weights per GPU") : head;
}

std::int64_t proposer_kv_bytes_per_token(SpecMethod method, const ModelSpec& target, const ModelSpec* draft, std::int64_t tp, Dtype kv_dtype) {
    auto caching = [&](const ModelSpec& m, bool first_only) {
        std::int64_t bytes = 0;
        for (const LayerSpec& l : m.layers) {
            if (!holds_per_token(l.kind)) continue;
            bytes = checked_add(bytes, layer_bytes_per_token_per_gpu(l, tp, kv_dtype), "proposer KV bytes per token");
            if (first_only) break;
        }
        return bytes;
    };
    return method == SpecMethod::Draft ? caching(*draft, false) : caching(target, true);
}

CostModel make_draft_model(const CostModelInputs& draft) {
    CostModel m = make_cost_model(draft);
    m.step_overhead_s = 0;
    return m;
}

SpecStep spec_step(const CostModel& target, const CostModel& draft, std::int64_t k, std::int64_t batch, std::int64_t context) {
    SpecStep s;
    // The target scores the last accepted token and the K drafts of every
    // sequence in one pass, as a prefill chunk of K + 1 tokens on top of the
    // cache (vllm/v1/core/sched/scheduler.py, schedule: a request's
    // num_new_tokens includes its spec_token_ids).
    if (target.layout.active()) {
        // The replica's sequences dealt over the DP ranks: the first batch mod DP ranks hold one more.
        const std::int64_t dp = target.layout.dp;
        const std::vector<SeqWork> more(static_cast<std::size_t>(batch / dp + 1), SeqWork{context, k + 1}),
            fewer(static_cast<std::size_t>(batch / dp), SeqWork{context, k + 1});
        std::vector<const std::vector<SeqWork>*> ranks(static_cast<std::size_t>(dp), &fewer);
        for (std::int64_t i = 0; i < batch % dp; ++i) ranks[static_cast<std::size_t>(i)] = &more;
        s.verify = dp_mixed_step(target, ranks);
    } else {
        s.verify = mixed_step(target, std::vector<SeqWork>(static_cast<std::size_t>(batch), SeqWork{context, k + 1}));
    }
    s.draft_pass = decode_step(draft, batch, context);
    s.draft_s = static_cast<double>(k) * s.draft_pass.total_s;
    s.total_s = s.verify.total_s + s.draft_s;
    return s;
}

}  // namespace kvplan
