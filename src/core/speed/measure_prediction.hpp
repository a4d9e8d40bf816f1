// What `kvplan measure` predicts beside what it timed: the roofline's step
// for the same sampled layers and shapes, with the bandwidth and FLOP/s just
// measured (add_predictions), or with an engine's speed profile on a
// database device (add_engine_predictions); and the one layer the
// benchmark builds (measured_layer).
#pragma once

#include <cstdint>

#include "core/hardware.hpp"
#include "core/model/model_spec.hpp"
#include "core/model/weight_format.hpp"
#include "core/speed/engine_profile.hpp"
#include "core/speed/measure_result.hpp"

namespace kvplan {

// The model's first attention layer, with the MLP width a token actually
// runs through; Error(Usage) for what the benchmark does not build (MLA,
// state, cross-attention layers; unequal K and V heads).
struct MeasuredLayer {
    std::int64_t hidden = 0;
    std::int64_t heads = 0;
    std::int64_t kv_heads = 0;
    std::int64_t head_dim = 0;
    std::int64_t intermediate = 0;
    bool gated = true;  // gate and up projections (SwiGLU), else one up projection
};
MeasuredLayer measured_layer(const ModelSpec& spec);

// The roofline's step cost for the timed layers, with the bandwidth and
// FLOP/s just measured and no fixed overhead, scaled to all layers like the
// measurements; plus the bytes each component must move. `w` and `kv` are
// bytes per weight and per cache element; `window` the timed layers' window.
void add_predictions(MeasureResult& r, const ModelSpec& spec, const WeightFormat& weights, Dtype kv_dtype, double w, double kv, std::int64_t window);

// Each step as `profile` predicts it on `gpu`, for the same sampled layers
// and shapes as `predicted_s`, without the profile's per-step and per-layer
// costs: the kernels are timed as CUDA graphs with no scheduler or sampler.
void add_engine_predictions(MeasureResult& r, const ModelSpec& spec, const EngineProfile& profile, const Gpu& gpu, Dtype kv_dtype);

}  // namespace kvplan
