#include "core/memory/parallel.hpp"

#include "core/checked.hpp"
#include "core/error.hpp"

namespace kvplan {

std::vector<PipelineStage> pipeline_stages(std::int64_t layers, std::int64_t pp) {
    if (pp < 1) usage_error("--pp must be at least 1, found " + std::to_string(pp));
    if (pp > layers)
        usage_error("--pp " + std::to_string(pp) + " exceeds the model's " + std::to_string(layers) + " layers");
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

std::int64_t stage_weight_bytes(const WeightSizing& weights, const ModelSpec& spec, const PipelineStage& stage,
                                std::int64_t pp, std::int64_t tp) {
    const std::int64_t layers = static_cast<std::int64_t>(spec.layers.size());
    const bool first = stage.index == 0;
    const bool last = stage.index == pp - 1;
    std::int64_t bytes = 0;
    std::int64_t embedding = 0;
    bool has_head = false;
    for (const WeightPart& p : weights.parts) {
        if (p.part == ParamPart::Embedding) {
            embedding = p.bytes;
            if (first) bytes = checked_add(bytes, p.bytes);
        } else if (p.part == ParamPart::Head) {
            has_head = true;
            if (last) bytes = checked_add(bytes, p.bytes);
        } else if (layers > 0) {
            // Per-layer parts: this stage's share, rounded up.
            bytes = checked_add(bytes, ceil_div(checked_mul(p.bytes, stage.layers, "stage weight bytes"), layers));
        }
    }
    if (spec.tied_embeddings && !has_head && last && !first) bytes = checked_add(bytes, embedding);
    if (weights.parts.empty()) bytes = ceil_div(checked_mul(weights.bytes, stage.layers, "stage weight bytes"), std::max<std::int64_t>(1, layers));
    return ceil_div(bytes, tp);
}

}  // namespace kvplan
