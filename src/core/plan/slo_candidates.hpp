// The candidates of `recommend --slo` (docs/recommend.md): every device x
// TP x PP (or DP attention + EP layout) x KV dtype x weight format x knob
// setting, and with --disaggregated every P/D unit, each configured as the
// engine would start (core/plan/engine_setup.hpp) or rejected with its
// reason; and the order the search ranks the ones that qualify in.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.hpp"
#include "core/model/model_spec.hpp"
#include "core/plan/engine_setup.hpp"
#include "core/plan/serve_knobs.hpp"
#include "core/plan/simulation.hpp"
#include "core/plan/slo_result.hpp"
#include "core/sim/slo_search.hpp"

namespace kvplan {

// One item of --kv-dtype's list: as given, and parsed (nullopt: auto).
struct KvDtypeChoice {
    std::string flag;
    std::optional<Dtype> dtype;
};

// One item of --weights-dtype's list: as given, as the step reads it, and
// as the engine's speed profile stores it (nullopt: the checkpoint as served).
struct WeightsChoice {
    std::string flag;
    WeightFormat weights;
    std::optional<WeightFormat> stored;
};

// Where multi-node layouts sit: the flags, or the device's scale-up domain.
struct NodeSpan {
    std::int64_t max_nodes = 1;
    std::int64_t gpus_per_node = 0;  // 0: the device's
    Nic nic;                         // between nodes (--nic)
};

// The space the search tries.
struct SloSpace {
    ServeKnobs base;                              // the engine, its seed; every candidate's layout and dtypes set over it
    std::int64_t max_gpus = 8;                    // a replica's GPUs at most (one node)
    std::optional<std::vector<std::int64_t>> pp;  // --pp's stage counts; nullopt: auto
    NodeSpan span;
    std::vector<KvDtypeChoice> kv_dtypes;  // at least one
    std::vector<WeightsChoice> formats;    // at least one
    bool two_batch_overlap = false;        // on the DP attention + EP layouts
    bool disaggregated = false;            // P/D units too
    std::string kv_link = "auto";          // the units' link: auto, or a --kv-link name
    // --spec-method: the proposer (empty: none), and what the commands carry.
    SpecResolver spec;
    std::string spec_method;
    std::int64_t spec_tokens = 0;
};

// One GPU x TP x knob setting (or one disaggregated unit), ready to search.
struct SloSetup {
    SloCandidate row;
    std::unique_ptr<CostModel> cost;                      // the pricers point into it (an aggregated candidate)
    std::unique_ptr<PdSide> prefill_side, decode_side;    // a unit's sides (its pricers point into their cost models)
    std::unique_ptr<std::vector<CostModel>> stage_costs;  // a pipeline's stages (the stage pricers point into them)
    // --spec-method: the proposer and its pricer (the engine's draft_s points into them).
    std::unique_ptr<ModelSpec> draft_model;
    std::unique_ptr<SpecInputs> spec;
    std::unique_ptr<DecodePricer> draft_decode;
    SearchEngine engine;
    bool ready = false;
};

// Every candidate, in the search's order (row.order), each `ready` to search
// or with row.reason saying why not.
std::vector<SloSetup> slo_candidates(const SloSpace& space, const ModelSpec& model, const std::vector<Gpu>& gpus, const Workload& w,
                                     const std::string& source, const Efficiency& efficiency);

// `k` with one KV dtype and one weight format of the lists.
ServeKnobs with_dtypes(ServeKnobs k, const KvDtypeChoice& kv, const WeightsChoice& weights);

// Best first: priced before unpriced, then cheaper per hour, fewer GPUs,
// more headroom; a stable sort keeps candidate order for the rest.
bool ranks_before(const SloCandidate& a, const SloCandidate& b);

}  // namespace kvplan
