// What `kvplan recommend --slo` found (printed by report/slo_report.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/plan/fleet.hpp"
#include "core/sim/slo_search.hpp"
#include "core/speed/recommend.hpp"
#include "core/speed/recommend_result.hpp"

namespace kvplan {

// Why a candidate of the search was rejected (Qualified: it was not), in
// the order the report lists rejections: missed targets first, then memory,
// then the rest, cost last.
enum class Rejection { Qualified, Slo, Memory, Link, Device, Simulation, Cost };

struct SloCandidate {
    std::string gpu;
    std::int64_t tp = 1;
    std::int64_t pp = 1;                 // pipeline stages of `tp` GPUs each (vLLM's batch queue; aggregated only)
    std::int64_t dp = 1;                 // data-parallel attention ranks with EP = dp (vLLM --data-parallel-size --enable-expert-parallel)
    std::string knobs;                   // "default", "latency" or "throughput" (docs/recommend.md)
    std::string kv_dtype_flag = "auto";  // the --kv-dtype item it was searched with
    std::string weights_flag = "auto";   // the --weights-dtype item
    Candidate serve;                     // the settings the engine commands carry (batch: max_num_seqs, dp: replicas)
    SearchOutcome outcome;
    FleetCost fleet;
    std::optional<ScaledFleet> scaled;  // a trace: the fleet scaled minute by minute to its rate
    Rejection rejection = Rejection::Qualified;
    // Rejected in setting up or simulating: the error's words, prefixed by
    // the kind (reject): "memory: ...", "link: ...", "simulation: ...".
    // Empty when the search's outcome (or cost_rank) says why: the report words it.
    std::string reason;
    std::size_t cost_rank = 0;  // qualified but past --top: its place in the ranking (1: the best)
    // A disaggregated unit (recommend --disaggregated): `prefill_replicas`
    // prefill instances of `prefill_tp` x `prefill_dp` GPUs and
    // `decode_replicas` decode instances of `tp` x `dp` (dp above 1: DP
    // attention + EP groups, TP 1 a rank); the outcome's rate, the fleet's
    // replicas and `serve` (the decode side) are per unit.
    std::int64_t prefill_replicas = 0, decode_replicas = 0, prefill_tp = 0, prefill_dp = 1;
    Candidate prefill_serve;
    std::string kv_link;    // the link as searched: nvlink, ib-ndr, ...
    std::size_t order = 0;  // its place in the search's candidate order (the engine that was searched)
    // The step model's band (capacity_search.hpp, add_bands): the rate
    // confirmed with every step kStepModelUncertainty slower (low) and
    // faster (high); 0 where no rate holds. `sized_low`: the fleet is sized
    // on the low end (recommend without --optimistic).
    struct StepBand {
        double low_rps = 0, high_rps = 0;
        bool sized_low = true;
    };
    std::optional<StepBand> band;
    double sizing_rate_rps() const { return band && band->sized_low && band->low_rps > 0 ? band->low_rps : outcome.max_rate_rps; }
    bool pd() const { return prefill_replicas > 0; }
    bool rejected() const { return rejection != Rejection::Qualified; }
    std::int64_t gpus_per_replica() const { return pd() ? prefill_replicas * prefill_tp * prefill_dp + decode_replicas * tp * dp : tp * pp * dp; }
};

// The word a rejection's reason starts with ("memory: ", "link: ",
// "simulation: ", "slo: ", "cost: "; a device's missing figure has none).
inline const char* rejection_prefix(Rejection why) {
    static const char* const prefix[] = {"", "slo: ", "memory: ", "link: ", "", "simulation: ", "cost: "};
    return prefix[static_cast<int>(why)];
}

// Marks `c` rejected for `why`, its reason `detail` (an error's words) after the kind's word.
inline void reject(SloCandidate& c, Rejection why, const std::string& detail) {
    c.rejection = why;
    c.reason = rejection_prefix(why) + detail;
}

struct SloRecommendResult {
    RecommendResult base;  // model, served checkpoint and weights: what serve_options() reads
    std::string engine = "vllm";
    std::string workload;          // what was replayed
    std::size_t replay_every = 1;  // a long trace: 1 request in this many replayed per run (capacity_search.hpp, thin_requests)
    Slo slo;
    double goodput = 0.99;
    double target_rps = 0;
    std::string target_source;  // "--rate" or "the trace's peak minute"
    double mean_input_tokens = 0, mean_output_tokens = 0;
    std::int64_t requests_per_run = 0;
    std::vector<SloCandidate> candidates;  // best first
    std::vector<SloCandidate> rejected;    // in candidate order
    std::int64_t tried = 0, simulations = 0, simulated_requests = 0;
    double search_s = 0;
    bool kv_axis = false;       // --kv-dtype listed more than one value: the tables show each candidate's
    bool weights_axis = false;  // --weights-dtype likewise
    std::size_t top = 5;
    bool wide = false;
    // --disaggregated: the best of each kind, whatever their rank (unset when none qualifies).
    bool disaggregated = false;
    std::optional<SloCandidate> best_aggregated, best_disaggregated;
    bool disaggregated_wins = false;  // both found: the unit ranks first
    // --plot and --report (io/plot_files.hpp): the devices searched, every
    // candidate that qualified, best first (the tables show the --top of
    // them), and the goodput curves of the first three.
    std::vector<std::string> gpu_ids;
    std::vector<SloCandidate> qualified;
    std::vector<GoodputCurve> curves;
};

}  // namespace kvplan
