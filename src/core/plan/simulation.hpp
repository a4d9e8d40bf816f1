// A simulation of the engine the knobs set up (core/plan/engine_setup.hpp),
// in one of three shapes: replicas of one engine (vLLM, SGLang, vLLM with
// pipeline stages) behind a router; replicas of a DP attention + EP layout;
// or a disaggregated prefill/decode unit. Each fills a SimulateResult
// (core/sim/simulate_result.hpp) but its summary, which the caller takes
// from r.run and r.slo (summarise) once the run is done.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/plan/engine_setup.hpp"
#include "core/plan/serve_knobs.hpp"
#include "core/sim/cluster.hpp"
#include "core/sim/simulate_result.hpp"
#include "core/speed/roofline.hpp"

namespace kvplan {

// Speculative decoding's proposer, which the caller resolves (a draft
// model's config may have to be read): its SpecInputs priced for `target`
// under `layout` (null: none), the draft model in `draft`; nullopt when the
// run does not speculate.
using SpecResolver = std::function<std::optional<SpecInputs>(const CostModelInputs& target, const ExpertLayoutInputs* layout, ModelSpec& draft)>;

// What every shape shares: the model, the device, the speed profile's
// efficiencies, the replicas and the router in front of them.
struct RunSetup {
    const ModelSpec* model = nullptr;
    Gpu gpu;
    Efficiency efficiency;
    ClusterConfig cluster;
    SpecResolver spec;              // empty: no speculation
    bool check_invariants = false;  // docs/invariants.md after every step (simulate --debug-invariants)
};

// `cluster.replicas` copies of the engine r.config (vLLM) or `sglang` holds,
// each pipeline stage or the whole model priced by the roofline. Fills r.run.
void simulate_replicas(const ServeKnobs& k, const RunSetup& s, const Workload& w, const SglangConfig& sglang, SimulateResult& r);

// Replicas of DP attention + EP layout `so`: every DP rank an engine core
// with the pool r.config (or `sglang`) holds, the ranks' steps priced
// together by the roofline's lockstep step. Fills r.run and r.layout.
void simulate_layout(const ServeKnobs& k, const RunSetup& s, const ScaleOut& so, const Workload& w, const SglangConfig& sglang, SimulateResult& r);

// A disaggregated unit: `prefill_replicas` instances of side `prefill` and
// `decode_replicas` of side `decode` (each its own device, TP, layout, vLLM
// pool and roofline), the KV moved over `link` (named `link_name` in the
// report). Fills r.run, r.disagg, and the decode side's pool figures;
// Error(Data) for a request longer than both sides start with (`source`
// names the workload, as refuse_long_requests says).
struct PdUnit {
    PdSide prefill, decode;
    std::int64_t prefill_replicas = 1, decode_replicas = 1;
    KvLink link;
    std::string link_name;
    bool layerwise = false;
};
void simulate_pd(const ServeKnobs& k, const ModelSpec& model, const PdUnit& unit, Router router, const Workload& w, const std::string& source,
                 SimulateResult& r, bool check_invariants = false);

}  // namespace kvplan
