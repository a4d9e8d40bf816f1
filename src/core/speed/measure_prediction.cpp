// `kvplan measure`'s predictions (core/speed/measure_prediction.hpp).
#include "core/speed/measure_prediction.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/overhead.hpp"
#include "core/model/config_parts.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

namespace {

// Bytes each component of a decode step must move, all `layers`: its weights
// (`w` bytes per element), or for attention the KV cache read (`kv` bytes per element).
void component_bytes(MeasuredStep& m, const MeasuredLayer& s, std::int64_t layers, double w, double kv, std::int64_t held) {
    const double L = static_cast<double>(layers), h = static_cast<double>(s.hidden), q = static_cast<double>(s.heads * s.head_dim),
                 k = static_cast<double>(s.kv_heads * s.head_dim), inter = static_cast<double>(s.intermediate);
    m.qkv_bytes = L * (q + 2 * k) * h * w;
    m.o_proj_bytes = L * h * q * w;
    m.mlp_bytes = L * (s.gated ? 3 : 2) * inter * h * w;
    m.attention_bytes = L * static_cast<double>(m.batch) * static_cast<double>(held) * 2 * k * kv;
}

}  // namespace

MeasuredLayer measured_layer(const ModelSpec& spec) {
    for (const LayerSpec& l : spec.layers)
        if (l.kind == LayerKind::Mla || l.kind == LayerKind::State || l.kind == LayerKind::Cross)
            usage_error("kvplan measure builds standard attention + MLP layers; " + spec.name + " has " + layer_kind_name(l.kind) +
                        " layers, which the CPU benchmark does not build");
    auto it = std::find_if(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) { return holds_per_token(l.kind); });
    if (it == spec.layers.end() || spec.heads <= 0) usage_error("kvplan measure needs a model with attention layers");
    if (it->k_head_dim != it->v_head_dim) usage_error("kvplan measure needs equal K and V head sizes");
    MeasuredLayer s;
    s.hidden = spec.hidden;
    s.heads = spec.heads;
    s.kv_heads = it->kv_heads;
    s.head_dim = it->k_head_dim;
    s.intermediate = activation_width(spec, 1);
    s.gated = std::any_of(spec.params.begin(), spec.params.end(), [](const ParamTensor& t) { return t.name.find("gate_proj") != std::string::npos; });
    if (spec.params.empty()) s.gated = true;
    return s;
}

void add_predictions(MeasureResult& r, const ModelSpec& spec, const WeightFormat& weights, Dtype kv_dtype, double w, double kv, std::int64_t window) {
    Gpu device = gpu_from_memory(1, r.device);
    device.id = "measured";
    device.bandwidth_bytes_per_s = static_cast<std::int64_t>(r.read_bytes_per_s);
    Efficiency e;
    e.measured_bandwidth_bytes_per_s = r.read_bytes_per_s;
    e.measured_flops_per_s = r.flops_per_s;
    e.step_overhead_s = 0;
    const CostModel cost = make_cost_model(CostModelInputs{&spec, device, weights, kv_dtype, 1, e, r.layers_measured});
    const double scale = static_cast<double>(r.layers_total) / static_cast<double>(r.layers_measured);
    const MeasuredLayer shape = measured_layer(spec);
    auto predict = [&](MeasuredStep& m, const StepCost& c) {
        m.predicted_s = c.total_s * scale;
        m.bytes = c.bytes() * scale;
        m.flops = c.flops() * scale;
    };
    for (MeasuredStep& m : r.decode) {
        predict(m, decode_step(cost, m.batch, m.tokens));
        component_bytes(m, shape, r.layers_total, w, kv, window > 0 ? std::min(m.tokens + 1, window) : m.tokens + 1);
    }
    for (MeasuredStep& m : r.prefill) predict(m, prefill_step(cost, 1, m.tokens));
}

void add_engine_predictions(MeasureResult& r, const ModelSpec& spec, const EngineProfile& profile, const Gpu& gpu, Dtype kv_dtype) {
    Efficiency e;
    e.profile = profile;
    e.step_overhead_s = 0;
    e.profile.layer_overhead_s = 0;
    const CostModel cost =
        make_cost_model(CostModelInputs{&spec, gpu, parse_weight_format("--precision", "bf16"), kv_dtype, 1, e, r.layers_measured});
    const double scale = static_cast<double>(r.layers_total) / static_cast<double>(r.layers_measured);
    for (MeasuredStep& m : r.decode) m.engine_predicted_s = decode_step(cost, m.batch, m.tokens).total_s * scale;
    for (MeasuredStep& m : r.prefill) m.engine_predicted_s = prefill_step(cost, 1, m.tokens).total_s * scale;
    r.engine = e.profile.name;
    r.engine_device = gpu.name;
}

}  // namespace kvplan
