// One SGLang engine replaying a workload, forward pass by forward pass, over
// a pool of KV token slots (page size 1) with its radix prefix cache. The
// loop is Scheduler.get_next_batch_to_run (python/sglang/srt/managers/
// scheduler.py) with the default server arguments (no mixed chunk, FCFS or
// longest prefix match):
//   - a pass is either a prefill batch or a decode batch of every running
//     request, never both; a prefill batch runs whenever one can be formed;
//   - the prefill batch (get_new_batch_prefill, PrefillAdder in
//     schedule_policy.py) takes the request being chunked first, then
//     waiting requests in order while fewer than max_running_requests run:
//     each first matches its prompt in the radix cache, then is admitted
//     only if its uncached tokens plus min(max_new_tokens, 4096) fit what is
//     left of free + evictable tokens after every running request's
//     reservation, min(max_new_tokens - generated, 4096) x new_token_ratio;
//     a prompt longer than what is left of chunked_prefill_size is chunked,
//     at most one at a time; the first refusal for memory marks the batch
//     full, and no prefill is tried again until a running request leaves;
//   - a decode pass first needs one free slot per request (evicting cached
//     tokens); short of that, retract_decode (schedule_batch.py) sends back
//     the requests with the fewest output tokens (the longest prompt among
//     equals) until 20 slots per remaining request are free, and sets
//     new_token_ratio from what the remaining requests have decoded; a
//     decode pass that needs no retraction decays new_token_ratio from 0.7
//     towards 0.098 over 600 passes.
// The pass's duration comes from `price` (the roofline's mixed step); a
// prefill pass that completes a prompt and every decode pass sample one
// token per request. The workload's output length is max_new_tokens (a
// benchmark's requests ignore EOS).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/sim/radix_cache.hpp"
#include "core/sim/scheduler.hpp"
#include "core/sim/workload.hpp"

namespace kvplan {

// --schedule-policy (schedule_policy.py): first come first served, or
// longest prefix match (the queue sorted by cached prefix when at most 128
// wait; a request with at most 32 cached tokens that shares 32 or more with
// one ahead of it in the queue goes last, so that the other fills the cache
// first).
enum class SglangPolicy { Fcfs, Lpm };

struct SglangConfig {
    std::int64_t max_total_tokens = 0;         // the token pool (max_total_num_tokens)
    std::int64_t context_len = 0;              // the model's context length (0: the pool's)
    std::int64_t max_running_requests = 0;     // 0: SGLang's default for the pool
    std::int64_t chunked_prefill_size = 8192;  // 0: no chunked prefill
    std::int64_t max_prefill_tokens = 16384;
    double schedule_conservativeness = 1.0;    // scales the initial new_token_ratio
    bool radix_cache = true;                   // false: --disable-radix-cache
    SglangPolicy policy = SglangPolicy::Fcfs;  // lpm without the radix cache is fcfs
};

// SGLang's max_running_requests when none is given (model_runner.py,
// _resolve_max_num_reqs): min(clamp(pool / context_len x 512, 2048, 4096),
// pool / 2).
std::int64_t sglang_default_max_running_requests(std::int64_t max_total_tokens, std::int64_t context_len);

// A request's state inside the SGLang engine that serves it.
struct SglangLive {
    std::int64_t max_new = 0;                     // max_new_tokens after SGLang's clamp to the pool
    std::int64_t generated = 0;                   // output tokens sampled
    std::int64_t computed = 0;                    // tokens whose KV is held (cached prefix included)
    RadixCache::NodeId node = RadixCache::kRoot;  // end of its locked path in the radix cache
    std::int64_t path = 0;                        // tokens on that path (held by the cache, not by the request)
    double last_token_s = 0;
    bool retracted = false;         // waiting again after a retraction
    std::vector<Segment> segments;  // its tokens' content, for the radix cache
};

// Every request of a workload, shared by the engines that serve them (each
// request lives in exactly one).
struct SglangStates {
    std::vector<RequestRecord> records;
    std::vector<SglangLive> live;
};

SglangStates sglang_states(const Workload& w);
void check_sglang_config(const SglangConfig& c);

// One SGLang engine (the rules above), handed its requests one by one and
// advanced up to a time, as VllmEngine is: simulate_sglang() drives one,
// simulate_sglang_cluster (cluster.hpp) several behind a router.
class SglangEngine {
public:
    SglangEngine(const Workload& w, const SglangConfig& c, const StepPricer& price, bool check, SglangStates& states);
    ~SglangEngine();
    SglangEngine(SglangEngine&&) noexcept;
    SglangEngine(const SglangEngine&) = delete;
    SglangEngine& operator=(const SglangEngine&) = delete;
    SglangEngine& operator=(SglangEngine&&) = delete;

    // Request r arrives at states.records[r].arrival_s (not before the last one added).
    void add(std::size_t r);
    // When its next pass starts; nullopt when it has nothing to do.
    std::optional<double> next_step_s() const;
    // Runs the passes that start before `horizon`; with `stop_on_done`,
    // returns after the first in which a request finished or was rejected.
    void advance(double horizon, bool stop_on_done);
    // Requests routed here, arrived by time t and not finished by then (t at
    // or after the start of its last pass).
    std::int64_t outstanding_at(double t) const;
    std::int64_t done() const;
    double now() const;
    // Its passes, retractions, ITL, series and pool figures (requests empty).
    SimRun take_totals();

    // Lockstep, as a DP attention rank (dp_group.hpp): the passes are driven
    // from outside and priced over every rank.
    bool idle() const;
    std::int64_t waiting_count() const;
    std::int64_t running_count() const;
    // Moves the clock to t (not before now()), logging the seconds crossed.
    void sync_to(double t);
    // Forms the pass at now() (the requests that arrived by then queued
    // first): a prefill batch, else a decode batch; empty when there is
    // nothing to run. The plan carries the pass's work (its batch stays
    // inside the engine; no proposer).
    StepPlan schedule();
    // Ends the pass just formed dt after now(); idle_step: the wave passed
    // with nothing planned here (SGLang's idle batch).
    void commit(const StepPlan& p, double dt);
    void idle_step(double dt);

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

// Replays `w` (arrivals sorted). Throws Error(Usage) for a config that
// cannot run. `check_invariants` verifies the pool and the radix cache after
// every pass (tests; costs a pass over the tree). The run's "blocks" are
// token slots: total_blocks is the pool, peak_blocks_used the most slots
// held by running requests and locked cache (evictable cache counts as
// free, as SGLang's token usage does).
SimRun simulate_sglang(const Workload& w, const SglangConfig& c, const StepPricer& price, bool check_invariants = false);

}  // namespace kvplan
