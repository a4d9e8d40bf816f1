#include "core/memory/parallel.hpp"

#include <algorithm>
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace kvplan {

std::vector<PipelineStage> pipeline_stages(std::int64_t layers, std::int64_t pp) {
    if (pp < 1) usage_error("--pp must be at least 1, found " + std::to_string(pp));
    if (pp > layers) usage_error("--pp " + std::to_string(pp) + " exceeds the model's " + std::to_string(layers) + " layers");
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(pp), layers / pp);
    const std::int64_t remainder = layers % pp;
    for (std::int64_t i = 2; i < remainder + 2; ++i) sizes[static_cast<std::size_t>(pp - i)] += 1;
    std::vector<PipelineStage> out;
    std::int64_t first = 0;
    for (std::int64_t s = 0; s < pp; ++s) {
        out.push_back(PipelineStage{s, first, sizes[static_cast<std::size_t>(s)]});
        first += sizes[static_cast<std::size_t>(s)];
    }
    return out;
}

ModelSpec stage_model(const ModelSpec& spec, const PipelineStage& stage) {
    ModelSpec out = spec;
    out.layers.assign(spec.layers.begin() + stage.first_layer, spec.layers.begin() + stage.first_layer + stage.layers);
    return out;
}

RankSplit split_over_tp(const WeightPart& stage_part, std::int64_t tp) {
    RankSplit r;
    for (const CappedShare& c : stage_part.capped) {
        if (!splits_fewer(c, tp)) continue;  // splits evenly at this TP
        const std::int64_t share = std::min(stage_part.bytes - r.capped_stage_bytes, c.bytes);
        r.capped_stage_bytes += share;
        r.capped_rank_bytes = checked_add(r.capped_rank_bytes, ceil_div(share, c.max_split));
    }
    r.even_bytes = stage_part.bytes - r.capped_stage_bytes;
    return r;
}

WeightPart stage_part(const WeightPart& part, const PipelineStage& stage, std::int64_t layers) {
    return layer_range_share(part, stage.first_layer, stage.layers, layers);
}

bool trtllm_whole_embedding(const ModelSpec& spec) {
    return spec.architecture == "DeepseekV3ForCausalLM" || spec.architecture == "Glm4MoeForCausalLM";
}

std::int64_t stage_weight_bytes(const WeightSizing& weights, const ModelSpec& spec, const PipelineStage& stage, std::int64_t pp, std::int64_t tp,
                                bool whole_embedding) {
    const std::int64_t layers = static_cast<std::int64_t>(spec.layers.size());
    const bool first = stage.index == 0;
    const bool last = stage.index == pp - 1;
    std::int64_t bytes = 0;   // split evenly over tp
    std::int64_t capped = 0;  // one rank's bytes of the tensors split over fewer ranks
    std::int64_t embedding = 0;
    bool has_head = false;
    for (const WeightPart& p : weights.parts) {
        if (p.part == ParamPart::Embedding) {
            embedding = p.bytes;
            if (first && whole_embedding) capped = checked_add(capped, p.bytes);
            else if (first) bytes = checked_add(bytes, p.bytes);
        } else if (p.part == ParamPart::Head) {
            has_head = true;
            if (last) bytes = checked_add(bytes, p.bytes);
        } else if (layers > 0) {
            // Per-layer parts: what this stage's layers hold.
            const RankSplit s = split_over_tp(stage_part(p, stage, layers), tp);
            bytes = checked_add(bytes, s.even_bytes);
            capped = checked_add(capped, s.capped_rank_bytes);
        }
    }
    if (spec.tied_embeddings && !has_head && last && !first) bytes = checked_add(bytes, embedding);
    if (weights.parts.empty()) bytes = ceil_div(checked_mul(weights.bytes, stage.layers, "stage weight bytes"), std::max<std::int64_t>(1, layers));
    return checked_add(ceil_div(bytes, tp), capped);
}

}  // namespace kvplan

namespace kvplan {

namespace {

std::string num(std::int64_t v) {
    return std::to_string(v);
}

// vLLM: D ranks of T GPUs; EP = T x D or no expert parallelism at all.
void vllm_rules(ScaleOut& so, const ScaleOutInputs& in) {
    so.gpus = checked_mul(in.tp, in.dp, "GPUs per stage");
    so.attention_tp = in.tp;
    // vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make:
    // use_ep = dp_size * tp_size > 1 and enable_expert_parallel; then
    // ep_size = the flattened tp_size = dp_size * tp_size and tp_size = 1.
    const bool use_ep = in.enable_expert_parallel || in.ep > 0;
    if (in.ep > 0 && in.ep != so.gpus)
        usage_error("--ep " + num(in.ep) + ": vLLM's expert-parallel size is always --tp x --dp = " + num(so.gpus) +
                    " (FusedMoEParallelConfig.make); give --enable-expert-parallel or --ep " + num(so.gpus));
    if (use_ep && so.gpus > 1) {
        so.ep = so.gpus;
        so.expert_tp = 1;
    } else {
        so.ep = 1;
        so.expert_tp = so.gpus;  // not use_ep: flatten_tp_across_dp shards each expert over T x D
    }
    // Dense layers, shared experts (DeepseekV2MLP), VocabParallelEmbedding
    // and ParallelLMHead use the TP group of one DP rank.
    so.dense_mlp_tp = so.shared_experts_tp = so.embedding_tp = so.head_tp = in.tp;
    if (in.moe_dense_tp > 0) usage_error("--moe-dense-tp-size is SGLang's flag (--engine sglang)");
    if (in.deepep) usage_error("--moe-a2a-backend is SGLang's flag (--engine sglang); vLLM picks its all-to-all with --all2all-backend");
    so.deepep = in.deepep_dispatch;
}

// SGLang: T GPUs in all, attention TP = T / D, experts over EP, each / (T / EP).
void sglang_rules(ScaleOut& so, const ScaleOutInputs& in) {
    if (in.enable_expert_parallel) usage_error("--enable-expert-parallel is vLLM's flag; SGLang takes --ep N (--ep-size)");
    so.gpus = in.tp;
    // python/sglang/srt/layers/dp_attention.py compute_dp_attention_world_info:
    // attn_tp_size = tp_size // dp_size.
    if (in.tp % in.dp != 0)
        usage_error("--dp " + num(in.dp) + " does not divide --tp " + num(in.tp) +
                    ": with DP attention SGLang's --tp counts every GPU and each DP rank gets tp / dp of them (dp_attention.py)");
    so.attention_tp = in.tp / in.dp;
    std::int64_t ep = in.ep > 0 ? in.ep : 1;
    // server_args.py: the deepep all-to-all backend sets ep_size = tp_size.
    if (in.deepep) {
        if (in.ep > 0 && in.ep != in.tp)
            usage_error("--ep " + num(in.ep) + " with --moe-a2a-backend deepep: SGLang sets ep_size = tp_size (" + num(in.tp) + ")");
        ep = in.tp;
    }
    // server_args.py: moe_tp_size = tp_size // ep_size.
    if (in.tp % ep != 0) usage_error("--ep " + num(ep) + " does not divide --tp " + num(in.tp) + ": SGLang splits each expert over tp / ep GPUs");
    so.ep = ep;
    so.expert_tp = in.tp / ep;
    // DeepseekV2DecoderLayer: a dense MLP takes tp_size 1 when
    // enable_moe_dense_fully_dp() (moe_dense_tp_size == 1), else the full TP.
    if (in.moe_dense_tp > 0 && in.moe_dense_tp != 1 && in.moe_dense_tp != in.tp)
        usage_error("--moe-dense-tp-size " + num(in.moe_dense_tp) + ": SGLang supports 1 or the full --tp (" + num(in.tp) + ")");
    so.dense_mlp_tp = in.moe_dense_tp > 0 ? in.moe_dense_tp : in.tp;
    // DeepseekV2MoE: shared experts take tp_size 1 under the deepep backend.
    so.shared_experts_tp = in.deepep ? 1 : in.tp;
    so.deepep = in.deepep;
    // VocabParallelEmbedding(enable_tp=not is_dp_attention_enabled()).
    so.embedding_tp = in.dp > 1 ? 1 : in.tp;
    // ParallelLMHead over the full TP group (use_attn_tp_group only with --enable-dp-lm-head).
    so.head_tp = in.tp;
}

// TensorRT-LLM (PyTorch backend): T GPUs in all. With enable_attention_dp
// each GPU is its own attention rank, and every GEMM weight outside the
// routed experts is replicated ("Data Parallelism for Attention: all GEMM
// weights are replicated on all GPUs; the KV cache is partitioned",
// docs/source/features/parallel-strategy.md): the dense MLP takes TP 1
// (_torch/models/modeling_deepseekv3.py, _compute_mlp_tp_size: "If using
// attention DP, the MLP also uses DP instead of TP"), the shared experts
// likewise (GatedMLP(overridden_tp_size=1) under attention DP), the
// Embedding of DeepseekV3Model has no mapping, and the LM head is whole
// unless enable_lm_head_tp_in_adp (not modelled).
// Routed experts: moe_tp_size x moe_ep_size = tp_size (mapping.py).
void trtllm_rules(ScaleOut& so, const ScaleOutInputs& in, bool whole_embedding) {
    if (in.enable_expert_parallel) usage_error("--enable-expert-parallel is vLLM's flag; TensorRT-LLM takes --ep N (moe_expert_parallel_size)");
    if (in.moe_dense_tp > 0) usage_error("--moe-dense-tp-size is SGLang's flag (--engine sglang)");
    if (in.deepep) usage_error("--moe-a2a-backend is SGLang's flag (--engine sglang)");
    so.gpus = in.tp;
    if (in.dp > 1 && in.dp != in.tp)
        usage_error("--dp " + num(in.dp) + ": TensorRT-LLM's enable_attention_dp makes each of the --tp " + num(in.tp) +
                    " GPUs its own attention rank; pass --dp " + num(in.tp) + " (or leave --dp out for attention TP)");
    const bool adp = in.dp > 1;
    const std::int64_t ep = in.ep > 0 ? in.ep : 1;
    if (in.tp % ep != 0)
        usage_error("--ep " + num(ep) + " does not divide --tp " + num(in.tp) +
                    ": TensorRT-LLM splits each expert over tp / ep GPUs "
                    "(moe_tensor_parallel_size)");
    so.ep = ep;
    so.expert_tp = in.tp / ep;
    so.attention_tp = adp ? 1 : in.tp;
    so.dense_mlp_tp = so.shared_experts_tp = so.embedding_tp = so.head_tp = adp ? 1 : in.tp;
    if (whole_embedding) so.embedding_tp = 1;
}

}  // namespace

ScaleOutRules scale_out_rules(const std::string& engine) {
    if (engine == "sglang") return ScaleOutRules::Sglang;
    if (engine == "trtllm") return ScaleOutRules::Trtllm;
    return ScaleOutRules::Vllm;
}

ScaleOut plan_scale_out(const ModelSpec& spec, const ScaleOutInputs& in) {
    if (in.tp < 1) usage_error("--tp must be at least 1, found " + num(in.tp));
    if (in.dp < 1) usage_error("--dp must be at least 1, found " + num(in.dp));
    if (in.ep < 0) usage_error("--ep must be at least 1, found " + num(in.ep));
    if (in.redundant_experts < 0) usage_error("--redundant-experts must not be negative, found " + num(in.redundant_experts));
    ScaleOut so;
    so.rules = in.rules;
    so.dp = in.dp;
    switch (in.rules) {
        case ScaleOutRules::Vllm: vllm_rules(so, in); break;
        case ScaleOutRules::Sglang: sglang_rules(so, in); break;
        case ScaleOutRules::Trtllm: trtllm_rules(so, in, trtllm_whole_embedding(spec)); break;
    }
    so.routed_experts = spec.experts;
    if ((so.ep > 1 || in.redundant_experts > 0) && spec.experts < 1)
        usage_error("--ep / --redundant-experts need a mixture-of-experts model; " + spec.name +
                    " has no routed experts (n_routed_experts / num_experts)");
    if (in.redundant_experts > 0 && so.ep < 2)
        usage_error("--redundant-experts needs expert parallelism (EPLB places extra experts over the EP group)");
    so.physical_experts = checked_add(spec.experts, in.redundant_experts, "physical experts");
    if (so.ep > 1 && so.physical_experts % so.ep != 0)
        usage_error("EP " + num(so.ep) + " does not divide the " + num(spec.experts) + " routed experts" +
                    (in.redundant_experts > 0 ? " + " + num(in.redundant_experts) + " redundant" : std::string()) +
                    " (n_routed_experts / num_experts): every GPU must hold as many experts");
    so.experts_per_gpu = so.ep > 0 ? so.physical_experts / so.ep : 0;
    return so;
}

StageWeights stage_weights_scaled(const WeightSizing& weights, const ModelSpec& spec, const PipelineStage& stage, std::int64_t pp,
                                  const ScaleOut& so) {
    const std::int64_t layers = static_cast<std::int64_t>(spec.layers.size());
    const bool first = stage.index == 0;
    const bool last = stage.index == pp - 1;
    StageWeights out;
    std::int64_t embedding = 0;
    bool has_head = false;
    auto add = [&](ParamPart part, std::int64_t stage_bytes, std::int64_t divisor, std::int64_t bytes, std::int64_t capped = 0) {
        WeightShare w{part, bytes, stage_bytes, divisor, capped};
        out.shares.push_back(w);
        if (part == ParamPart::Experts) out.expert_bytes = checked_add(out.expert_bytes, bytes);
        else out.dense_bytes = checked_add(out.dense_bytes, bytes);
        out.total_bytes = checked_add(out.total_bytes, bytes);
    };
    for (const WeightPart& p : weights.parts) {
        if (p.part == ParamPart::Embedding) embedding = p.bytes;
        if (p.part == ParamPart::Head) has_head = true;
        WeightPart held{p.part, 0, 0, {}, {}};  // what this stage holds of the part
        if (p.part == ParamPart::Embedding || p.part == ParamPart::Head) {
            if (p.part == ParamPart::Embedding ? !first : !last) continue;
            held = p;
        } else if (layers > 0) {
            held = stage_part(p, stage, layers);
        }
        const std::int64_t stage_bytes = held.bytes;
        switch (p.part) {
            case ParamPart::Experts: {
                // physical_experts / ep whole experts of routed_experts, each / expert_tp.
                const std::int64_t divisor = checked_mul(so.ep, so.expert_tp, "expert split");
                const std::int64_t held = ceil_div(checked_mul(stage_bytes, so.physical_experts, "expert bytes"),
                                                   checked_mul(std::max<std::int64_t>(1, so.routed_experts), divisor, "expert split"));
                add(p.part, stage_bytes, divisor, held);
                break;
            }
            case ParamPart::Attention:
            case ParamPart::Mixer: {
                const RankSplit s = split_over_tp(held, so.attention_tp);
                add(p.part, stage_bytes, so.attention_tp, checked_add(ceil_div(s.even_bytes, so.attention_tp), s.capped_rank_bytes),
                    s.capped_stage_bytes);
                break;
            }
            case ParamPart::Mlp: add(p.part, stage_bytes, so.dense_mlp_tp, ceil_div(stage_bytes, so.dense_mlp_tp)); break;
            case ParamPart::SharedExperts: add(p.part, stage_bytes, so.shared_experts_tp, ceil_div(stage_bytes, so.shared_experts_tp)); break;
            case ParamPart::Embedding: add(p.part, stage_bytes, so.embedding_tp, ceil_div(stage_bytes, so.embedding_tp)); break;
            case ParamPart::Head: add(p.part, stage_bytes, so.head_tp, ceil_div(stage_bytes, so.head_tp)); break;
            case ParamPart::Router:
            case ParamPart::Norm: add(p.part, stage_bytes, 1, stage_bytes); break;
        }
    }
    // A tied head on a last stage that is not the first: a second copy of the embedding, split as the head.
    if (spec.tied_embeddings && !has_head && last && !first) add(ParamPart::Head, embedding, so.head_tp, ceil_div(embedding, so.head_tp));
    if (weights.parts.empty()) {
        const std::int64_t stage_bytes = ceil_div(checked_mul(weights.bytes, stage.layers, "stage weight bytes"), std::max<std::int64_t>(1, layers));
        add(ParamPart::Attention, stage_bytes, so.attention_tp, ceil_div(stage_bytes, so.attention_tp));
    }
    return out;
}

std::optional<ScaleOutInputs> scale_out_from_flags(const ScaleOutFlags& f, ScaleOutRules rules) {
    if (f.dp == 0 && f.ep == 0 && !f.enable_expert_parallel && f.redundant_experts == 0 && f.moe_dense_tp == 0 && f.moe_a2a_backend.empty())
        return std::nullopt;
    if (rules != ScaleOutRules::Sglang && !f.moe_a2a_backend.empty()) usage_error("--moe-a2a-backend applies to --engine sglang only");
    if (rules != ScaleOutRules::Vllm && !f.all2all_backend.empty()) usage_error("--all2all-backend applies to --engine vllm only");
    ScaleOutInputs s;
    s.rules = rules;
    s.tp = f.tp;
    s.dp = f.dp > 0 ? f.dp : 1;
    s.ep = f.ep;
    s.enable_expert_parallel = f.enable_expert_parallel;
    s.redundant_experts = f.redundant_experts;
    s.moe_dense_tp = f.moe_dense_tp;
    s.deepep = f.moe_a2a_backend == "deepep";
    s.deepep_dispatch = f.all2all_backend == "deepep_low_latency";
    return s;
}

}  // namespace kvplan
