// How tensor and pipeline parallelism split a model across GPUs: which layers
// each pipeline stage holds (vLLM's get_pp_indices) and the weight bytes each
// GPU of a stage holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"
#include "core/model/weights.hpp"

namespace kvplan {

struct PipelineStage {
    std::int64_t index = 0;
    std::int64_t first_layer = 0;
    std::int64_t layers = 0;
};

// vllm/distributed/utils.py get_pp_indices: layers / pp each, the remainder
// given one each to the stages before the last, counting back from it (the
// first stage holds the embeddings and the last the LM head). Throws
// Error(Usage) when pp exceeds the layers.
std::vector<PipelineStage> pipeline_stages(std::int64_t layers, std::int64_t pp);

// The ModelSpec of one stage: only its layers (tensors are left whole; use
// stage_weight_bytes for weights).
ModelSpec stage_model(const ModelSpec& spec, const PipelineStage& stage);

// One TP rank's share of a per-layer part's stage bytes (`stage_part`, from
// stage_part): the tensors TP may split over at most `max_split` < tp
// ranks (WeightPart::capped: K/V of fewer KV heads than ranks, MLA's
// down-projections) each / max_split, the rest even over tp.
struct RankSplit {
    std::int64_t even_bytes = 0;          // of the stage's bytes, split evenly over tp
    std::int64_t capped_stage_bytes = 0;  // of the stage's bytes, split over fewer ranks
    std::int64_t capped_rank_bytes = 0;   // what one rank holds of those
};
RankSplit split_over_tp(const WeightPart& stage_part, std::int64_t tp);

// What the stage's own layers hold of a per-layer part (layer_range_share):
// DeepSeek-V3 at PP 4 puts its 3 dense MLPs and 12 MoE layers on stage 0 and
// 16 MoE layers on stage 2, 30% more weight bytes a GPU there.
WeightPart stage_part(const WeightPart& part, const PipelineStage& stage, std::int64_t layers);

// Weight bytes one GPU of `stage` holds: what the stage's layers hold of each
// per-layer part, the embedding on the first stage, the LM head on the last
// (a tied head is a second copy there when pp > 1, as vLLM loads it), all
// divided over `tp` ranks but for the tensors split over fewer (split_over_tp)
// and, with `whole_embedding`, the embedding (trtllm_whole_embedding); norms,
// replicated in practice, are negligible and divided too.
std::int64_t stage_weight_bytes(const WeightSizing& weights, const ModelSpec& spec, const PipelineStage& stage, std::int64_t pp, std::int64_t tp,
                                bool whole_embedding = false);

// TensorRT-LLM models whose token embedding is an Embedding built without a
// mapping, so whole on every GPU at any TP: DeepseekV3Model
// (DeepseekV3ForCausalLM: DeepSeek-V3/R1, Kimi-K2;
// _torch/models/modeling_deepseekv3.py) and Glm4Model (Glm4MoeForCausalLM,
// modeling_glm.py). Its Llama and others pass the mapping and split it.
bool trtllm_whole_embedding(const ModelSpec& spec);

}  // namespace kvplan

namespace kvplan {

// Data-parallel attention and expert parallelism: how an engine lays one
// model over the GPUs of a pipeline stage when attention runs data-parallel
// (each DP rank its own requests and KV cache) and the routed experts are
// spread whole over an expert-parallel group. The two engines spell it
// differently (docs/scale-out.md):
//   vLLM    --tensor-parallel-size T --data-parallel-size D [--enable-expert-parallel]:
//           D ranks of T GPUs each; attention, dense layers, embeddings and
//           the LM head split over T; routed experts over EP = T x D when
//           expert parallelism is on, else sharded as tensors over T x D
//           (vllm/model_executor/layers/fused_moe/config.py,
//           FusedMoEParallelConfig.make, flatten_tp_across_dp).
//   SGLang  --tp T --dp D --enable-dp-attention [--ep N]: T GPUs in all;
//           attention TP = T / D per DP rank (python/sglang/srt/layers/
//           dp_attention.py, compute_dp_attention_world_info); routed
//           experts over EP N, each split over T / N (server_args.py,
//           moe_tp_size = tp_size // ep_size).
//   TensorRT-LLM  tensor_parallel_size T, enable_attention_dp,
//           moe_expert_parallel_size N (its wide-EP recipes: T = N, "DEP N"):
//           T GPUs in all, each its own attention rank (D = T); every
//           weight but the routed experts whole on every GPU; routed
//           experts over EP N, each split over T / N (moe_tensor_parallel_size)
//           (docs/scale-out.md).
enum class ScaleOutRules { Vllm, Sglang, Trtllm };

struct ScaleOutInputs {
    ScaleOutRules rules = ScaleOutRules::Vllm;
    std::int64_t tp = 1;                  // the engine's TP flag (vLLM: per DP rank; SGLang, TensorRT-LLM: GPUs in all)
    std::int64_t dp = 1;                  // attention data-parallel ranks
    std::int64_t ep = 0;                  // --ep; 0: not given
    bool enable_expert_parallel = false;  // vLLM's flag: EP = TP x DP
    std::int64_t redundant_experts = 0;   // EPLB's extra physical experts (vLLM --num-redundant-experts,
                                          // SGLang --ep-num-redundant-experts)
    std::int64_t moe_dense_tp = 0;        // SGLang --moe-dense-tp-size; 0: not given (the full TP)
    bool deepep = false;                  // SGLang --moe-a2a-backend deepep
    bool deepep_dispatch = false;         // vLLM --all2all-backend deepep_low_latency (the layout unchanged)
};

// The layout as `concurrency`'s flags and a baseline scenario's keys give it
// (0 or empty: not given).
struct ScaleOutFlags {
    std::int64_t tp = 1;
    std::int64_t dp = 0;
    std::int64_t ep = 0;
    bool enable_expert_parallel = false;
    std::int64_t redundant_experts = 0;
    std::int64_t moe_dense_tp = 0;
    std::string moe_a2a_backend;  // SGLang: "none" or "deepep"
    std::string all2all_backend;  // vLLM: "allgather_reducescatter" or "deepep_low_latency"
};

// nullopt when no scale-out flag is given: the plain TP x PP split.
// Error(Usage) for moe_a2a_backend on an engine other than SGLang.
std::optional<ScaleOutInputs> scale_out_from_flags(const ScaleOutFlags& f, ScaleOutRules rules);
// The rules an engine name reads the flags by: "sglang", "trtllm", else vLLM's.
ScaleOutRules scale_out_rules(const std::string& engine);

// How each part of the model is split on one GPU of a stage (a divisor of 1:
// a whole copy on every GPU).
struct ScaleOut {
    ScaleOutRules rules = ScaleOutRules::Vllm;
    std::int64_t gpus = 1;  // GPUs per pipeline stage: vLLM T x D, SGLang and TensorRT-LLM T
    std::int64_t dp = 1;
    std::int64_t attention_tp = 1;  // attention (and its KV heads) split
    std::int64_t ep = 1;            // expert-parallel group; 1: no expert parallelism
    std::int64_t expert_tp = 1;     // tensor split of each routed expert
    std::int64_t dense_mlp_tp = 1;  // dense MLP layers (DeepSeek's first_k_dense_replace layers)
    std::int64_t shared_experts_tp = 1;
    std::int64_t embedding_tp = 1;
    std::int64_t head_tp = 1;
    std::int64_t routed_experts = 0;    // the config's experts per MoE layer
    std::int64_t physical_experts = 0;  // routed + redundant
    std::int64_t experts_per_gpu = 0;   // physical / EP (each split by expert_tp)
    bool deepep = false;                // DeepEP dispatches and combines (SGLang deepep, vLLM deepep_low_latency)
};

// Resolves and validates the engine's flags; throws Error(Usage) naming the
// flag and the rule for what the engine refuses.
ScaleOut plan_scale_out(const ModelSpec& spec, const ScaleOutInputs& in);

// One part's bytes on one GPU, with the split that produced them.
struct WeightShare {
    ParamPart part = ParamPart::Attention;
    std::int64_t bytes = 0;         // on one GPU of the stage
    std::int64_t stage_bytes = 0;   // the stage's whole copy of this part
    std::int64_t divisor = 1;       // TP split; for routed experts EP x expert TP
    std::int64_t capped_bytes = 0;  // of stage_bytes, split over fewer ranks than divisor (split_over_tp)
};

struct StageWeights {
    std::vector<WeightShare> shares;  // in ParamPart order
    std::int64_t expert_bytes = 0;    // routed experts on this GPU
    std::int64_t dense_bytes = 0;     // everything else on this GPU
    std::int64_t total_bytes = 0;
};

// Weight bytes one GPU of `stage` holds under `so`: the stage's share of each
// per-layer part (as stage_weight_bytes), the embedding on the first stage,
// the LM head on the last; routed experts as physical_experts / ep whole
// experts (each / expert_tp), every other part divided by its own TP; the
// router and norms whole on every GPU (ReplicatedLinear in both engines).
StageWeights stage_weights_scaled(const WeightSizing& weights, const ModelSpec& spec, const PipelineStage& stage, std::int64_t pp,
                                  const ScaleOut& so);

}  // namespace kvplan
