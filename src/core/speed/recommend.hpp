// SLO-driven search: GPU type x (TP x DP) x batch, keeping the configurations
// that meet a time-to-first-token and a time-per-output-token target and fit
// in memory, ranked by throughput per GPU (or by cost per million tokens when
// prices are known). Per device the smallest TP that meets both targets is the
// candidate; data-parallel replicas fill the GPU count (docs/roofline.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.hpp"
#include "core/model/model_spec.hpp"
#include "core/model/weight_format.hpp"
#include "core/speed/speculative.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

// --spec-method in the analytic search: every candidate verifies K drafts a
// decode step (vLLM's --speculative-config), priced by spec_step, its
// proposer's weights and KV out of the pool.
struct RecommendSpec {
    SpecMethod method = SpecMethod::Eagle;
    std::int64_t k = 1;                      // drafts a step
    std::vector<double> rates;               // conditional acceptance a_1..a_K
    const ModelSpec* draft_model = nullptr;  // SpecMethod::Draft
    std::string draft_label;                 // its id, for the commands
};

struct RecommendInputs {
    const ModelSpec* model = nullptr;
    std::vector<Gpu> gpus;        // the devices to consider
    std::int64_t context = 8192;  // max_model_len: the longest request
    std::int64_t prompt = 0;      // tokens prefilled for TTFT (0: context - output)
    std::int64_t output = 256;
    double ttft_s = 1.0;  // targets
    double tpot_s = 0.05;
    std::int64_t max_gpus = 8;             // TP degrees 1, 2, 4, 8 up to this
    std::int64_t num_gpus = 0;             // GPUs to fill with TP x DP replicas (0: one replica, DP 1)
    std::map<std::string, double> prices;  // gpu id -> USD per GPU-hour
    WeightFormat weights;
    std::optional<Dtype> kv_dtype;
    Efficiency efficiency;
    // Mixture-of-experts models: also vLLM's data-parallel attention with
    // expert parallelism on 2, 4 and 8 GPUs of one node (docs/scale-out.md),
    // priced with this published all-to-all table; empty: not tried.
    std::vector<AllToAllLatency> all_to_all;
    // ... and over 2, 4, 8 and 16 whole nodes up to max_nodes, of
    // gpus_per_node GPUs each (0: the device's scale-up domain), their
    // all-to-all between nodes over `nic` (docs/scale-out.md, "Nodes and NICs").
    std::int64_t max_nodes = 1;
    std::int64_t gpus_per_node = 0;
    Nic nic;
    std::optional<RecommendSpec> spec;  // nullopt: plain decode
};

// A target a configuration can miss: memory (not one request of the context
// fits), TTFT, or TPOT (even at batch 1).
enum class Target { Memory, Ttft, Tpot };

struct Candidate {
    std::string gpu;
    std::int64_t tp = 1;
    std::int64_t pp = 1;  // pipeline stages of `tp` GPUs each (the SLO search's; 1 in the analytic one)
    std::int64_t dp = 1;  // data-parallel replicas of tp x pp x attention_dp GPUs each
    // Data-parallel attention ranks of one replica, the routed experts over
    // EP = tp x attention_dp (vLLM --data-parallel-size --enable-expert-parallel); 1: plain TP.
    std::int64_t attention_dp = 1;
    std::int64_t nodes = 1;          // nodes one replica spans (a DP attention + EP layout over several)
    bool two_batch_overlap = false;  // its DP + EP steps as two micro-batches
    std::string spec_method;         // speculative decoding: mtp|eagle|draft ("": none)
    std::int64_t spec_tokens = 0;    // K drafts a step
    std::string spec_draft;          // the draft model's id or path (draft)
    std::int64_t batch = 1;          // concurrent sequences per replica that still meet the TPOT target
    std::int64_t max_requests = 0;   // what memory holds at the context, per replica
    double ttft_s = 0;               // one replica's: DP does not change latency
    double tpot_s = 0;               // decode step at `batch` and the full context
    double tokens_per_s_per_gpu = 0;
    double tokens_per_s = 0;  // all replicas: dp x batch / tpot
    std::optional<double> usd_per_million_tokens;
    std::vector<Target> missed;  // empty for candidates; what a rejected configuration misses
    // The engine settings the plan assumes; the printer writes them as each
    // engine's flags (src/io/recommend_report.cpp).
    std::int64_t max_model_len = 0;
    std::int64_t max_num_batched_tokens = 0;  // a whole prompt plus a decode token per sequence, per engine core (DP rank)
    Dtype kv_dtype = Dtype::Bf16;
    double vllm_mem_fraction = 0.9;     // --gpu-memory-utilization
    double sglang_mem_fraction = 0.9;   // --mem-fraction-static (SGLang's default for this TP)
    double trtllm_free_fraction = 0.9;  // --kv_cache_free_gpu_memory_fraction giving the same KV pool

    std::int64_t replica_gpus() const { return tp * pp * attention_dp; }
    std::int64_t gpus() const { return replica_gpus() * dp; }
    bool expert_parallel() const { return attention_dp > 1; }
    // Sequences on the busiest DP rank: vLLM's --max-num-seqs is per engine core.
    std::int64_t rank_batch() const { return (batch + attention_dp - 1) / attention_dp; }
};

struct Recommendation {
    std::vector<Candidate> candidates;   // per device, the smallest TP that meets both targets; best first
    std::vector<Candidate> rejected;     // every TP tried that misses a target, closest first
    std::int64_t configurations = 0;     // GPU x layout pairs tried (TP degrees, and DP + EP layouts for MoE models)
    std::int64_t fitting = 0;            // ... that hold at least one request
    std::int64_t larger_tp_meeting = 0;  // pairs that meet both targets at a larger TP than the candidate's
    // When nothing meets both targets: which one binds ("ttft", "tpot", "both",
    // "memory", or "separately" when each is met but never together), and the
    // closest configurations for each.
    std::string binding;
    std::optional<Candidate> best_ttft;
    std::optional<Candidate> best_tpot;
    std::vector<std::string> notes;
};

// Throws Error(Usage) for non-positive targets or a prompt beyond the context.
Recommendation recommend(const RecommendInputs& in);

}  // namespace kvplan
