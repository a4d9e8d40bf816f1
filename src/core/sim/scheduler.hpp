// One vLLM V1 engine replaying a workload, step by step, over a fixed pool
// of KV blocks (vllm/v1/core/sched/scheduler.py, Scheduler.schedule; block
// accounting as vllm/v1/core/kv_cache_manager.py allocate_slots):
//   - running requests first, in admission order: each takes the tokens it
//     still needs (a decode 1, a prefill chunk the rest of its prompt, at
//     most long_prefill_token_threshold when set), within the step's token
//     budget (max_num_batched_tokens); when its blocks cannot be allocated,
//     the most recently admitted running request is preempted (its blocks
//     freed, recomputed later from the front of the waiting queue) until
//     they can, or the request itself is the one preempted;
//   - then, only if nothing was preempted, waiting requests in FCFS order
//     while the budget lasts and fewer than max_num_seqs run, a prompt that
//     does not fit the budget prefilled in chunks; the first that cannot get
//     its blocks stops the admission;
//   - with prefix caching, a new request first reuses the cached blocks its
//     prompt's leading content matches (at most all but its last token).
// The step's duration comes from `price` (the roofline's mixed step); the
// step that completes a prompt or a decode samples one token.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/sim/workload.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

struct SchedulerConfig {
    std::int64_t num_gpu_blocks = 0;
    std::int64_t block_size = 16;
    std::int64_t max_num_seqs = 256;
    std::int64_t max_num_batched_tokens = 8192;
    std::int64_t long_prefill_token_threshold = 0;  // 0: no cap
    bool prefix_caching = true;
};

// What happened to one request; times in seconds from the trace's start.
struct RequestRecord {
    double arrival_s = 0;
    double scheduled_s = -1;    // first scheduled
    double first_token_s = -1;
    double finish_s = -1;
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache, first admission
    std::int64_t preemptions = 0;
    bool rejected = false;      // needs more blocks than the whole pool
};

// vLLM's periodic log line, once per simulated second.
struct TimePoint {
    double t_s = 0;
    std::int64_t running = 0;
    std::int64_t waiting = 0;
    double kv_cache_usage = 0;        // blocks in use / total
    double prompt_tokens_per_s = 0;   // prefill (and recompute) tokens computed in that second
    double generation_tokens_per_s = 0;
};

struct SimRun {
    std::vector<RequestRecord> requests;  // in workload order
    std::vector<double> itl_s;            // every gap between two tokens of one request
    std::vector<TimePoint> timeseries;
    std::int64_t steps = 0;
    std::int64_t preemptions = 0;
    std::int64_t recomputed_tokens = 0;   // tokens computed again after preemption
    std::int64_t prompt_tokens = 0;       // prompt tokens of admitted requests (first admission)
    std::int64_t prefix_hit_tokens = 0;
    std::int64_t peak_blocks_used = 0;
    std::int64_t total_blocks = 0;
    double end_s = 0;
};

using StepPricer = std::function<double(const std::vector<SeqWork>&)>;

// Replays `w` (arrivals sorted). Throws Error(Usage) for a config that
// cannot run (no blocks, a zero budget). `check_invariants` verifies the
// block pool after every step (tests; costs a pass over the pool).
SimRun simulate(const Workload& w, const SchedulerConfig& c, const StepPricer& price, bool check_invariants = false);

}  // namespace kvplan
