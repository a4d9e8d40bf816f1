#include "core/gate/scenario.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/memory/capacity.hpp"
#include "core/memory/engine.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/weight_format.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

CapacityInputs scenario_capacity_inputs(const Gpu& gpu, const ScenarioInputs& in, const EngineProfile& profile) {
    CapacityInputs cap;
    cap.gpu = gpu;
    cap.engine = parse_engine(in.engine);
    cap.tp = in.tp;
    cap.pp = in.pp;
    cap.scale_out = scale_out_from_flags(scenario_layout(in), scale_out_rules(in.engine));
    cap.contexts = {in.context_tokens};
    cap.mem_util = in.mem_util;
    if (in.kv_dtype != "auto") cap.kv_dtype = parse_dtype(in.kv_dtype);
    if (in.weights_dtype != "auto")
        cap.weights_format = int4_as_stored(parse_weight_format("weights_dtype", in.weights_dtype), profile.int4_group_bits, profile.quantize_head);
    cap.max_model_len = in.max_model_len;
    cap.max_num_seqs = in.max_num_seqs;
    cap.max_batched_tokens = in.max_num_batched_tokens;
    cap.block_size = in.block_size;
    return cap;
}

namespace {

// GPUs on one scale-up link for a scenario's layout of `gpus` GPUs: its
// gpus_per_node, or gpus / nodes (checked to divide when read), else the
// device's default, as `roofline --nodes --gpus-per-node` resolves them.
std::int64_t scenario_gpus_per_node(const ScenarioInputs& in, std::int64_t gpus, const Gpu& gpu) {
    if (in.gpus_per_node > 0) return in.gpus_per_node;
    if (in.nodes > 0) return gpus / in.nodes;
    return default_gpus_per_node(gpu.interconnect);
}

// The scenario's NIC from the profile's table (ib-ndr when it names none, as
// roofline's --nic); Error(Data) naming the field for an unknown id.
Nic scenario_nic(const ScenarioInputs& in, const EngineProfile& profile) {
    const std::string id = in.nic.empty() ? "ib-ndr" : in.nic;
    std::string ids;
    for (const Nic& n : profile.nics) {
        if (n.id == id) return n;
        ids += (ids.empty() ? "" : ", ") + n.id;
    }
    if (in.nic.empty()) return Nic{};  // no table: a layout that spans nodes is refused by the cost model
    data_error("nic: expected one of " + ids + ", found \"" + id + "\"");
}

}  // namespace

ScenarioResult evaluate_scenario(const ModelSpec& model, const Gpu& gpu, const ScenarioInputs& in, const Efficiency& efficiency) {
    const std::optional<Dtype> kv_dtype = in.kv_dtype == "auto" ? std::nullopt : parse_dtype(in.kv_dtype);
    ScenarioResult r;
    auto set = [&r](Figure f, FigureValue v) { r.figures[static_cast<std::size_t>(f)] = v; };

    // Sizing: what `kvplan size --context N --kv-dtype D` prints, whole model.
    KvOptions kv;
    kv.kv_dtype = kv_dtype;
    kv.context = in.context_tokens;
    kv.tp = in.tp;
    const KvSizing sizing = size_kv(model, kv);
    set(Figure::KvBytesPerToken, FigureValue::of(sizing.bytes_per_token));
    set(Figure::KvBytesPerSequence, FigureValue::of(sizing.bytes_per_sequence));

    // Capacity: what `kvplan concurrency` prints for the one context.
    const CapacityPlan plan = plan_capacity(model, scenario_capacity_inputs(gpu, in, efficiency.profile));
    set(Figure::KvCacheTokens, plan.kv_cache_tokens ? FigureValue::of(*plan.kv_cache_tokens) : FigureValue::null());
    set(Figure::MaxRequests, FigureValue::of(plan.rows.at(0).max_requests));
    r.weights_bytes_per_gpu = plan.budget.weights_bytes;
    r.kv_pool_bytes_per_gpu = plan.budget.kv_pool_bytes;
    r.model_weights_bytes = plan.model_weights_bytes;
    r.smallest_tp = plan.smallest_tp;
    r.warnings = plan.warnings;

    // Decode: what `kvplan roofline --batch B --context N` prints for the row.
    // With a DP + EP layout, roofline's layout step: `batch` is the replica's
    // sequences over the DP ranks, on the nodes the scenario places them (docs/scale-out.md).
    if (in.batch) {
        const WeightFormat weights = parse_weight_format("weights_dtype", in.weights_dtype);
        CostModelInputs cost_in{&model, gpu, weights, kv_dtype, in.tp, efficiency, std::nullopt};
        std::optional<ExpertLayoutInputs> layout;
        if (const std::optional<ScaleOutInputs> si = scale_out_from_flags(scenario_layout(in), scale_out_rules(in.engine))) {
            const ScaleOut so = plan_scale_out(model, *si);
            if (so.dp > 1 || so.ep > 1) {
                cost_in.tp = so.attention_tp;
                layout = ExpertLayoutInputs{so, 1.0, efficiency.profile.all_to_all, scenario_gpus_per_node(in, so.gpus, gpu),
                                            scenario_nic(in, efficiency.profile)};
                if (in.two_batch_overlap) set_two_batch_overlap(*layout, parse_engine(in.engine) == Engine::Sglang);
            }
        }
        const CostModel cost = layout ? make_cost_model(cost_in, *layout) : make_cost_model(cost_in);
        const StepCost step = decode_step(cost, *in.batch, in.context_tokens);
        const double step_s = round_significant(step.total_s);
        set(Figure::DecodeStepS, FigureValue::of_real(step_s));
        set(Figure::DecodeTokensPerS, FigureValue::of_real(round_significant(static_cast<double>(*in.batch) / step.total_s)));
    }
    return r;
}

}  // namespace kvplan
