// How tensor and pipeline parallelism split a model across GPUs: which layers
// each pipeline stage holds (vLLM's get_pp_indices) and the weight bytes each
// GPU of a stage holds.
#pragma once

#include <cstdint>
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

// Weight bytes one GPU of `stage` holds: per-layer parts in proportion to the
// stage's layers, the embedding on the first stage, the LM head on the last
// (a tied head is a second copy there when pp > 1, as vLLM loads it), all
// divided over `tp` ranks (norms, replicated in practice, are negligible).
std::int64_t stage_weight_bytes(const WeightSizing& weights, const ModelSpec& spec, const PipelineStage& stage,
                                std::int64_t pp, std::int64_t tp);

}  // namespace kvplan
