// VllmEngine's insides (scheduler.hpp): the scheduler's queues, the KV
// block accounting, the CPU tier and remote-prefill state, and the pipeline.
// Internal to src/core/sim: included only by the files that implement the
// engine (scheduler.cpp, engine_offload.cpp, disagg.cpp,
// engine_invariants.cpp), so a change here rebuilds those alone.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/sim/cpu_tier.hpp"
#include "core/sim/kv_cache_manager.hpp"
#include "core/sim/kv_connector.hpp"
#include "core/sim/scheduler.hpp"

namespace kvplan {

class VllmEngine::Impl {
public:
    Impl(const Workload& w, const SchedulerConfig& c, const StepPricer& price, const DecodePricer& decode, bool check, RequestStates& states,
         const StagePricers& stages);
    ~Impl();

    // VllmEngine's API, as scheduler.hpp documents it.
    void add(std::size_t r);
    std::optional<double> next_step_s() const;
    void advance(double horizon, bool stop_on_done);
    std::int64_t outstanding_at(double t) const;
    std::int64_t done() const { return done_; }
    double now() const { return t_; }
    const SimRun& totals() const { return run_; }
    SimRun take_totals();
    bool idle() const { return running_.empty() && waiting_.empty() && inbox_.empty() && !(connector_ && connector_->receiving()); }
    std::int64_t waiting_count() const { return static_cast<std::int64_t>(waiting_.size() + inbox_.size()); }
    std::int64_t running_count() const { return static_cast<std::int64_t>(running_.size()); }
    void sync_to(double t);
    StepPlan schedule();
    void commit(const StepPlan& p, double dt);
    void idle_step(double dt);
    void set_remote_prefill(RemoteLoad load);

    // Checks INV-1 to INV-7 (engine_invariants.cpp, docs/invariants.md).
    void check_invariants() const;

private:
    // A batch in the pipeline: its requests, each with the preemption count
    // it was scheduled under (a request preempted since gets nothing back)
    // and whether the batch samples its next token.
    struct InFlight {
        struct Item {
            std::size_t r = 0;
            std::int64_t preemptions = 0;
            bool samples = false;
        };
        std::vector<Item> items;
        double prompt_tokens = 0;
        double end_s = 0;  // when it leaves the last stage
    };

    std::int64_t total_tokens(std::size_t r) const { return w_.requests[r].input_tokens + live_[r].generated; }
    // Speculative decoding: whether r's next step is a decode (it has sampled
    // a token and computed everything before it), which then carries k drafts.
    bool decoding(std::size_t r) const { return live_[r].generated > 0 && live_[r].computed + 1 == total_tokens(r); }
    std::int64_t accepted_drafts(std::size_t r, std::int64_t drafts) const;
    void keep_spec_tokens(std::size_t r, std::int64_t n);
    void preempt(std::size_t r);
    std::int64_t cap(std::int64_t n, std::int64_t budget) const;
    void arrive();
    bool admission_blocked() const;
    bool schedule_running(StepPlan& p, std::int64_t& budget);
    void schedule_waiting(StepPlan& p, std::int64_t& budget);
    bool admit(std::size_t r, StepPlan& p, std::int64_t& budget);
    void plan(StepPlan& p);
    // The idle rules every driver shares (scheduler.cpp).
    bool blocked_on_load() const;
    bool nothing_to_schedule() const;
    double next_event_s() const;
    std::optional<double> idle_until() const;
    bool jump_idle(double wake, double horizon);
    void wait_for_loads();
    static constexpr double kNever = std::numeric_limits<double>::infinity();
    void note_plan(const StepPlan& p);
    void register_full_blocks(std::size_t r);
    void sample(double until);
    bool decode_run(double horizon);
    void advance_pipeline(double horizon, bool stop_on_done);
    void submit_batch(const StepPlan& p);
    void complete_batch();
    void finish_requests();
    std::int64_t decode_run_length(std::int64_t& context_sum) const;
    // Disaggregated decode (defined in disagg.cpp).
    bool admit_remote(std::size_t r, StepPlan& p, std::int64_t& budget);
    void admit_loaded_behind_head(StepPlan& p, std::int64_t& budget);
    bool head_starved() const;
    void collect_loaded();
    // KV offload (engine_offload.cpp; the connector's hooks in
    // kv_connector.cpp): a load's start, and the loads done by now going
    // back to the waiting queue.
    bool start_load(std::size_t r, KvCacheManager::Hits& hits, std::int64_t blocks);
    void finish_loads();
    // When the first load in flight ends (either connector); kNever when none is.
    double next_load_end_s() const { return connector_ ? connector_->next_recv_end_s() : kNever; }
    const std::vector<KvConnector::Load>& loads() const;
    std::int64_t loading_count() const { return connector_ ? static_cast<std::int64_t>(connector_->loads().size()) : 0; }

    // Invariants (engine_invariants.cpp, docs/invariants.md).
    void check_requests() const;
    void check_causal(std::size_t r) const;
    void check_blocks() const;
    void check_limits() const;

    const Workload& w_;
    SchedulerConfig c_;
    const StepPricer& price_;
    const DecodePricer& decode_;
    const StagePricers& stages_;
    bool check_;
    std::vector<RequestRecord>& records_;
    std::vector<LiveRequest>& live_;
    SimRun run_;
    KvCacheManager kv_cache_;        // the block pool and the prefix cache (after run_: it keeps its peak)
    std::deque<std::size_t> inbox_;  // added, not yet arrived
    std::deque<std::size_t> waiting_;
    std::vector<std::size_t> running_;
    // The last step planned (INV-7): its sequences and tokens.
    std::int64_t planned_seqs_ = 0, planned_tokens_ = 0;
    std::vector<std::size_t> finished_;
    std::vector<std::vector<std::size_t>> by_phase_;  // decode run: running requests by context mod block size
    std::deque<InFlight> in_flight_;                  // pipeline: oldest first
    std::vector<double> stage_free_s_;                // pipeline: when each stage is done with the last batch sent
    bool stalled_ = false;                            // pipeline: nothing could be scheduled since the last batch came back
    std::int64_t added_ = 0;
    std::int64_t done_ = 0;
    std::int64_t last_step_done_ = 0;  // requests its last step finished
    double last_step_start_ = 0;
    double t_ = 0;
    double next_sample_ = 1;
    double interval_prompt_ = 0, interval_generation_ = 0;
    // KV loaded from outside (kv_connector.hpp): at most one connector,
    // which keeps the requests waiting for their loads (WAITING_FOR_REMOTE_KVS).
    std::unique_ptr<KvConnector> connector_;    // null: neither
    CpuOffloadConnector* offload_ = nullptr;    // connector_, when it is the CPU tier's
    RemotePrefillConnector* remote_ = nullptr;  // connector_, when this is a disaggregated decode instance
    std::vector<std::size_t> recved_;           // scratch: the requests whose loads ended (finished_recving)
    // Disaggregated decode: per request 0 its KV still remote, 1 loading,
    // 2 loaded (its last prompt token to compute), 3 served locally.
    std::vector<std::int8_t> remote_state_;
    double wait_load_s_ = -1;            // nothing can be scheduled before this load ends (-1: none)
    std::int64_t plan_done_before_ = 0;  // lockstep: done() when schedule() was called
    // Invariant checks' scratch (marks per request, references per block)
    // and the clock at the last check.
    mutable std::vector<char> inv_mark_;
    mutable std::vector<std::int64_t> inv_refs_;
    mutable double inv_t_ = 0;
};

}  // namespace kvplan
