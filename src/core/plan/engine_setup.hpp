// The engine a simulation runs, set up from a model, a device, the speed
// profile's efficiencies and the serving knobs (core/plan/serve_knobs.hpp):
// the KV pool and scheduler limits vLLM or SGLang would start with, the
// DP attention + EP layout, the sides of a P/D unit, the step pricers and
// speculative decoding. Shared by `kvplan simulate` and `recommend --slo`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.hpp"
#include "core/memory/capacity.hpp"
#include "core/model/model_spec.hpp"
#include "core/plan/serve_knobs.hpp"
#include "core/sim/cpu_tier.hpp"
#include "core/sim/disagg.hpp"
#include "core/sim/dp_group.hpp"
#include "core/sim/scheduler.hpp"
#include "core/sim/sglang_scheduler.hpp"
#include "core/sim/simulate_result.hpp"
#include "core/speed/roofline.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

// The CPU tier vLLM would build for plan `p` on `gpu` from `bytes` of host
// memory (Error(Usage) for a hybrid model, a device without a host-link
// figure, a size that holds no block).
CpuTierConfig cpu_tier_config(std::int64_t bytes, const CapacityPlan& p, const Gpu& gpu, bool hybrid);
// The KV pool and scheduler limits vLLM would start with (concurrency --engine vllm).
SchedulerConfig engine_config(const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu, std::int64_t& max_model_len, std::string& source);
// SGLang's pool in tokens and its scheduler's defaults; r.config gets the same figures for the report.
SglangConfig sglang_config(const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu, SimulateResult& r);
// Pipeline parallelism: the cost model of each of `pp` stages of in.model
// (the memory wing's split of its layers), and one pricer per stage (the
// roofline's mixed step over its layers, with the send to the next stage)
// pointing into them.
std::vector<CostModel> stage_cost_models(const CostModelInputs& in, std::int64_t pp);
StagePricers stage_pricers(const std::vector<CostModel>& stages);
// What the messages call a workload drawn from --rate/--concurrency and the length distributions.
inline constexpr const char* kSyntheticSource = "the synthetic workload";
// Error(Data) for a request longer than max_model_len (vLLM refuses it, SGLang would cut it);
// `source` is the trace's path or kSyntheticSource.
void refuse_long_requests(const Workload& w, std::int64_t max_model_len, const std::string& source, bool sglang);

// --kv-link: nvlink, ib-ndr, ib-xdr, roce or "<N>GB/s" (10^9 bytes per
// second, per direction per rank); "nvlink" needs both sides' devices on
// NVLink and takes the slower one's bandwidth. Error(Usage) otherwise.
KvLink parse_kv_link(const std::string& text, const Gpu& prefill, const Gpu& decode);

// The KV dtype `size` resolves for the model at `tp` (nullopt: the serving dtype).
Dtype kv_sizing_dtype(const ModelSpec& model, std::optional<Dtype> kv_dtype, std::int64_t tp);
// The pools of a P/D run: replicas per side (round robin), the link, and the
// KV bytes per token each of the decode side's `decode_tp` ranks pulls.
DisaggConfig disagg_config(const ModelSpec& model, std::int64_t prefill_replicas, std::int64_t decode_replicas, const KvLink& link,
                           std::int64_t decode_tp, std::optional<Dtype> kv_dtype, bool layerwise);

// The DP attention + EP layout the knobs give one replica (concurrency --dp
// resolves the same), or nullopt without one; Error(Usage) for what the DP
// group does not simulate.
std::optional<ScaleOut> layout_of(const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu);
// GPUs per node for a layout of `gpus` GPUs on a device whose scale-up
// domain is `device_default` GPUs; Error(Usage) when --nodes and
// --gpus-per-node disagree with the layout.
std::int64_t resolve_gpus_per_node(const NodeKnobs& n, std::int64_t gpus, std::int64_t device_default);
// Two-batch overlap on an EP layout (`layout`; null: none): the engine's
// micro-batching thresholds, or Error(Usage) where it cannot apply.
void add_two_batch_overlap(ExpertLayoutInputs* layout, Engine engine);
// The expert layout's inputs for `so` on `gpu` under the knobs (imbalance,
// all-to-all floors, nodes, two-batch overlap).
ExpertLayoutInputs expert_layout_inputs(const ServeKnobs& k, const ScaleOut& so, const Gpu& gpu);

// One side of a P/D run (simulate --prefill-replicas, recommend
// --disaggregated): its device, TP, DP attention + EP layout (if any),
// vLLM pool and step cost.
struct PdSide {
    Gpu gpu;
    std::int64_t tp = 1;
    std::optional<ScaleOut> layout;
    SchedulerConfig config;
    std::int64_t max_model_len = 0;
    std::string pool_source;
    CostModel cost;
    // The ranks among which one decode GPU's share of the KV is split: the
    // DP rank's attention TP, or the instance's TP.
    std::int64_t kv_tp() const { return layout ? layout->attention_tp : tp; }
};
// The side the knobs describe (their tp, dp, expert parallelism) on `gpu`;
// Error as the TP check, the layout or the pool throws it (callers say
// which pool).
PdSide pd_side(const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu, const Efficiency& efficiency);
// How a side's replicas step (core/sim/disagg.hpp): a DP group's waves, one
// engine's EP step, or one engine's step; the pricers point into side.cost.
PoolPricing pool_pricing(const PdSide& side);

// Error(Usage) when `cost` has no FLOP/s figure for its dtype: every prompt
// of a simulation is a prefill, which a memory-only price would make nearly free.
void require_flops(const CostModel& cost, const Gpu& gpu);

// The roofline's price of a step (mixed_step) and of a pure decode step from
// its batch and context sum (decode_batch_step). Both keep a reference to
// `cost`, which must outlive them.
StepPricer step_pricer(const CostModel& cost);
// The lockstep wave of a DP attention + EP replica's ranks (dp_mixed_step);
// it keeps a reference to `cost` likewise.
DpStepPricer dp_step_pricer(const CostModel& cost);
DecodePricer decode_pricer(const CostModel& cost);

// Speculative decoding on vLLM's engine (docs/simulate.md, "Speculative
// decoding"): r.config's pool gives up the proposer's weights on one GPU
// (under `layout`, its routed experts over EP) and shares its blocks with
// the proposer's KV; r.config.spec verifies K drafts a decode step, priced
// by `draft_decode`, which must outlive the run; r.spec reports it.
void add_speculation(const ServeKnobs& k, const ModelSpec& model, const ModelSpec& draft_model, const SpecInputs& spec,
                     const DecodePricer& draft_decode, SimulateResult& r, const ScaleOut* layout = nullptr);

}  // namespace kvplan
