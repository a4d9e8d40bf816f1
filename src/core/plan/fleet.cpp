// A fleet's size and cost (core/plan/fleet.hpp).
#include "core/plan/fleet.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked.hpp"
#include "core/checked_conversion.hpp"
#include "core/error.hpp"

namespace kvplan {

FleetCost fleet_cost(double target_rps, double per_replica_rps, std::int64_t gpus_per_replica, std::optional<double> usd_per_gpu_hour,
                     double mean_input_tokens, double mean_output_tokens) {
    if (!(target_rps > 0) || !(per_replica_rps > 0) || !std::isfinite(target_rps / per_replica_rps))
        usage_error("a fleet needs a positive target rate and a positive rate per replica");
    FleetCost f;
    const double replicas = std::ceil(target_rps / per_replica_rps);
    if (replicas > 1e9) usage_error("the target rate needs more than 10^9 replicas");
    f.replicas = checked_trunc(replicas, "replicas");
    f.gpus = checked_mul(f.replicas, gpus_per_replica, "GPUs in the fleet");
    if (!usd_per_gpu_hour) return f;
    f.usd_per_hour = static_cast<double>(f.gpus) * *usd_per_gpu_hour;
    const double requests_per_hour = target_rps * 3600;
    auto per_million = [&](double tokens_per_request) -> std::optional<double> {
        if (!(tokens_per_request > 0)) return std::nullopt;
        return *f.usd_per_hour / (requests_per_hour * tokens_per_request / 1e6);
    };
    f.usd_per_million_input_tokens = per_million(mean_input_tokens);
    f.usd_per_million_output_tokens = per_million(mean_output_tokens);
    f.usd_per_million_tokens = per_million(mean_input_tokens + mean_output_tokens);
    return f;
}

ScaledFleet replicas_over_time(const std::vector<double>& rates_rps, double window_s, double per_replica_rps, const FleetCost& fixed,
                               std::int64_t gpus_per_replica, std::optional<double> usd_per_gpu_hour) {
    if (!(per_replica_rps > 0) || !(window_s > 0)) usage_error("replicas over time need a positive rate per replica and window");
    ScaledFleet f;
    f.window_s = window_s;
    std::int64_t replica_windows = 0;
    for (const double rate : rates_rps) {
        const double need = std::max(1.0, std::ceil(rate / per_replica_rps));
        if (!(need <= 1e9)) usage_error("a window of the trace needs more than 10^9 replicas");
        const std::int64_t n = checked_trunc(need, "replicas");
        f.replicas.push_back(n);
        replica_windows = checked_add(replica_windows, n, "replica windows");
    }
    if (f.replicas.empty()) return f;
    f.min_replicas = *std::min_element(f.replicas.begin(), f.replicas.end());
    f.max_replicas = *std::max_element(f.replicas.begin(), f.replicas.end());
    const double hours_per_window = window_s / 3600;
    f.gpu_hours = static_cast<double>(checked_mul(replica_windows, gpus_per_replica, "GPU windows")) * hours_per_window;
    f.fixed_gpu_hours = static_cast<double>(fixed.gpus) * static_cast<double>(f.replicas.size()) * hours_per_window;
    if (usd_per_gpu_hour) {
        f.usd = f.gpu_hours * *usd_per_gpu_hour;
        f.fixed_usd = f.fixed_gpu_hours * *usd_per_gpu_hour;
    }
    return f;
}

}  // namespace kvplan
