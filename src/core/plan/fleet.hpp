// What a fleet of replicas costs for the traffic it must serve, fixed for
// the peak or scaled window by window (`recommend --slo`, docs/recommend.md,
// "Fleet and cost"). Moved from core/sim/slo_search: sizing and pricing a
// fleet is the plan wing's question; the simulator only finds the rate one
// replica sustains.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kvplan {

// What a fleet of replicas serving `target_rps` costs: replicas =
// ceil(target / per-replica rate), GPUs = replicas x GPUs per replica, USD per
// hour = GPUs x the GPU-hour price, and per million tokens the fleet's cost
// per hour over the tokens per hour the target traffic carries (of each kind,
// and of both: docs/recommend.md says why the whole bill goes on each kind).
struct FleetCost {
    std::int64_t replicas = 0;
    std::int64_t gpus = 0;
    std::optional<double> usd_per_hour;
    std::optional<double> usd_per_million_input_tokens, usd_per_million_output_tokens, usd_per_million_tokens;
};
// Error(Usage) for a non-positive rate; checked arithmetic for the counts.
FleetCost fleet_cost(double target_rps, double per_replica_rps, std::int64_t gpus_per_replica, std::optional<double> usd_per_gpu_hour,
                     double mean_input_tokens, double mean_output_tokens);

// The fleet scaled window by window to a trace's rate (replicas over time):
// each window needs ceil(rate / per-replica rate) replicas, at least one (a
// served endpoint stays up). Against it, the fixed fleet sized for the peak
// minute (FleetCost::replicas) over the same windows. The sliding peak minute
// is at least every fixed window's rate, so no window needs more than the
// fixed fleet.
struct ScaledFleet {
    double window_s = 60;
    std::vector<std::int64_t> replicas;  // per window
    std::int64_t min_replicas = 0, max_replicas = 0;
    double gpu_hours = 0;        // sum of replicas x GPUs per replica x window_s / 3600
    double fixed_gpu_hours = 0;  // the fixed fleet's GPUs x windows x window_s / 3600
    std::optional<double> usd, fixed_usd;
};
ScaledFleet replicas_over_time(const std::vector<double>& rates_rps, double window_s, double per_replica_rps, const FleetCost& fixed,
                               std::int64_t gpus_per_replica, std::optional<double> usd_per_gpu_hour);

}  // namespace kvplan
