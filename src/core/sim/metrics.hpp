// A simulation reduced to the figures `vllm bench serve` reports, with its
// definitions (vllm/benchmarks/serve.py, calculate_metrics):
//   TTFT  first token - arrival
//   TPOT  (e2e - TTFT) / (output tokens - 1), requests with more than one output token
//   ITL   every gap between two consecutive tokens of a request
//   E2E   finish - arrival;  queue: first scheduled - arrival
// Percentiles interpolate linearly between order statistics, as numpy's
// default. Duration runs from the first arrival to the last finish.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/sim/scheduler.hpp"

namespace kvplan {

struct Distribution {
    double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
    std::int64_t count = 0;
};

// Linear-interpolation percentile (numpy's default) of `v`, sorted in place.
double percentile(std::vector<double>& v, double p);
Distribution distribution(std::vector<double> v);
// The same figures over the expanded list of gaps, without expanding it:
// sorted (gap, count) runs, order statistics found by cumulative count.
// The mean sums gap x count over the sorted runs, so equal multisets give
// equal means bit for bit, whatever order the gaps were recorded in.
Distribution distribution(const GapCounts& gaps);

struct Slo {
    std::optional<double> ttft_s, tpot_s, e2e_s;
    bool any() const { return ttft_s || tpot_s || e2e_s; }
};

struct SimSummary {
    std::int64_t requests = 0, completed = 0, rejected = 0;
    double duration_s = 0;
    Distribution ttft_s, tpot_s, itl_s, e2e_s, queue_s;
    double input_tokens_per_s = 0, output_tokens_per_s = 0, requests_per_s = 0;
    std::int64_t preemptions = 0, recomputed_tokens = 0, steps = 0;
    double prefix_cache_hit_rate = 0;  // prompt tokens served from cache / prompt tokens admitted
    // The same split by tier (KV offload): the GPU's share, and the CPU
    // tier's (nullopt without one); the two add up to the rate above.
    double prefix_cache_hit_rate_gpu = 0;
    std::optional<double> prefix_cache_hit_rate_cpu;
    std::int64_t offload_bytes = 0, onload_bytes = 0;  // GPU -> host, host -> GPU, per rank
    std::int64_t kv_blocks_total = 0;
    double kv_peak_usage = 0;  // peak blocks in use / total; with replicas (or DP ranks) the highest one's
    std::int64_t replicas = 1;
    std::optional<double> goodput_requests_per_s;  // requests meeting every SLO / duration
    std::optional<double> slo_attainment;          // share of requests meeting every SLO
};

// `with_itl` false leaves itl_s empty: the SLO search reads TTFT, TPOT and
// E2E only, and sorting every token gap was a tenth of its time.
SimSummary summarise(const SimRun& run, const Slo& slo, bool with_itl = true);

}  // namespace kvplan
