// What `kvplan simulate` produced (printed by report/simulate_report.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"
#include "core/sim/served_run.hpp"

namespace kvplan {

// One side of a disaggregated run (simulate --prefill-replicas/--decode-replicas).
struct DisaggPool {
    std::string gpu_name;
    std::int64_t tp = 1;
    SchedulerConfig config;              // each engine core's pool and limits (a DP rank's, with dp > 1)
    std::vector<ReplicaStats> stats;     // one per replica (a DP replica's steps are its waves)
    std::int64_t dp = 1, ep = 1;         // each replica's DP attention + EP layout (1, 1: none)
    std::vector<ReplicaStats> dp_ranks;  // with dp > 1: every replica's engine cores, replica by replica
};

struct DisaggReport {
    DisaggPool prefill, decode;
    std::string link;             // "ib-ndr", or "80GB/s" as given
    double link_bytes_per_s = 0;  // per direction, per rank
    double link_latency_s = 0;
    bool layerwise = false;
    std::int64_t kv_bytes_per_token_per_rank = 0;  // the decode side's layout
    Distribution transfer_s;                       // every transfer, admission on the decode side to KV loaded
};

// Speculative decoding as simulated (simulate --spec-method).
struct SpecReport {
    std::string method;                            // mtp, eagle or draft
    std::string proposer;                          // the draft model, or "one layer of the target's shape"
    std::vector<double> rates;                     // a_1..a_K
    double expected_tokens_per_step = 0;           // 1 + sum of prod a_i
    std::int64_t draft_kv_bytes_per_token = 0;     // per rank, taken from the pool
    std::int64_t draft_weights_bytes_per_gpu = 0;  // a draft model's weights, taken from the pool first
    std::int64_t blocks_without_draft = 0;         // the pool before the drafter's KV
};

// Data-parallel attention + expert parallelism (simulate --dp / --ep): the
// layout of one replica, each DP rank an engine with the KV pool `config` holds.
struct DpLayoutReport {
    std::int64_t dp = 1;
    std::int64_t attention_tp = 1;
    std::int64_t ep = 1;
    std::int64_t gpus = 1;             // per replica: dp x attention TP
    std::int64_t experts_per_gpu = 0;  // routed (+ redundant) experts of a MoE layer on one GPU
    std::int64_t nodes = 1;
    std::int64_t gpus_per_node = 1;
    std::string nic;  // between nodes; empty on one node
    double expert_imbalance = 1.0;
    bool sglang = false;             // SGLang's DP attention schedulers, not vLLM's engine cores
    bool two_batch_overlap = false;  // --two-batch-overlap
};

struct SimulateResult {
    std::string engine = "vllm";  // whose scheduler: vllm|sglang (config then holds SGLang's figures)
    std::string schedule_policy = "fcfs";
    std::string model_label;
    std::string gpu_name;
    std::string workload;          // "trace.csv (19,366 requests)" or "Poisson 5 req/s, 1,000 requests"
    std::int64_t concurrency = 0;  // a closed loop's requests in flight; 0: open loop (arrivals as given)
    SchedulerConfig config;
    std::int64_t max_model_len = 0;
    std::string pool_source;             // where num_gpu_blocks came from
    std::string router = "round-robin";  // with more than one replica
    std::int64_t pp = 1;                 // pipeline stages per replica
    SimRun run;
    SimSummary summary;
    Slo slo;
    std::optional<DisaggReport> disagg;       // P/D runs only
    std::optional<SpecReport> spec;           // --spec-method runs only
    std::optional<DpLayoutReport> layout;     // --dp / --ep runs only
    std::vector<std::string> notes;           // what the engine would do differently (printed after the summary)
    std::optional<ServedComparison> compare;  // --compare: the trace's measured latencies beside the simulated
};

}  // namespace kvplan
