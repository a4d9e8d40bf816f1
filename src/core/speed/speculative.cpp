#include "core/speed/speculative.hpp"

#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "core/model/weights.hpp"

#include <algorithm>

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

CostModel make_draft_head_model(const CostModelInputs& target) {
    const std::int64_t layers = std::max<std::int64_t>(1, static_cast<std::int64_t>(target.model->layers.size()));
    // One layer, without embedding and head: `kvplan measure`'s sample of 1.
    CostModelInputs one = target;
    one.sample_layers = 1;
    CostModel head = make_cost_model(one);
    // The LM head is what the whole model costs beyond all its layers sampled.
    CostModelInputs body_in = target;
    body_in.sample_layers = layers;
    const CostModel body = make_cost_model(body_in);
    const CostModel full = make_cost_model(target);
    head.dense_weight_bytes += std::max(0.0, full.dense_weight_bytes - body.dense_weight_bytes);
    head.matmul_flops_per_token += std::max(0.0, full.matmul_flops_per_token - body.matmul_flops_per_token);
    head.step_overhead_s = 0;
    head.notes.clear();
    return head;
}

std::int64_t draft_head_weight_bytes(const ModelSpec& target) {
    // The MoE layers: an expert tensor has layers x experts copies.
    std::int64_t moe_layers = 0;
    for (const ParamTensor& t : target.params)
        if (t.part == ParamPart::Experts && target.experts > 0) moe_layers = std::max(moe_layers, t.copies / target.experts);
    const std::int64_t layers = static_cast<std::int64_t>(target.layers.size());
    // One layer's copy of every per-layer tensor. With MoE layers the last
    // layer is one of them, so a dense MLP held by fewer than all layers
    // (DeepSeek's first_k_dense_replace) is not in it.
    ModelSpec one = target;
    one.params.clear();
    one.use_stored_weights = false;  // the formula's tensors, not the checkpoint's files
    for (ParamTensor t : target.params) {
        if (t.part == ParamPart::Embedding || t.part == ParamPart::Head) continue;
        const bool expert_side = t.part == ParamPart::Experts || t.part == ParamPart::SharedExperts || t.part == ParamPart::Router;
        if (moe_layers > 0 && t.part == ParamPart::Mlp && t.copies < layers) continue;
        t.copies = expert_side && moe_layers > 0 ? std::max<std::int64_t>(1, t.copies / moe_layers) : 1;
        one.params.push_back(t);
    }
    const std::int64_t projection = checked_mul(checked_mul(2, target.hidden, "draft head projection"), target.hidden, "draft head projection");
    return checked_add(size_weights(one).bytes, bytes_for(projection, serving_dtype(target.checkpoint_dtype)), "draft head weights");
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
    s.verify = mixed_step(target, std::vector<SeqWork>(static_cast<std::size_t>(batch), SeqWork{context, k + 1}));
    s.draft_pass = decode_step(draft, batch, context);
    s.draft_s = static_cast<double>(k) * s.draft_pass.total_s;
    s.total_s = s.verify.total_s + s.draft_s;
    return s;
}

}  // namespace kvplan
