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
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/sim/cpu_tier.hpp"
#include "core/sim/workload.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

struct VllmLayout;

// One KV-cache group of vLLM's hybrid allocator: layers of one KV spec whose
// manager (vllm/v1/core/single_type_kv_cache_manager.py) takes its own
// blocks from the shared pool for every request (docs/simulate.md, "KV-cache
// groups").
enum class KvGroupKind {
    Full,     // FullAttentionManager: every block, until the request ends (MLA too)
    Sliding,  // SlidingWindowManager: blocks that fell out of the window are freed
    Chunked,  // ChunkedLocalAttentionManager: blocks of finished chunks are freed
    Mamba,    // MambaManager: one block holds the state (prefix caching off)
};

struct KvGroup {
    KvGroupKind kind = KvGroupKind::Full;
    std::int64_t window_tokens = 0;  // Sliding: sliding_window; Chunked: attention_chunk_size
    std::int64_t block_tokens = 16;  // this group's block size (a Mamba group's: max_model_len)
    bool operator==(const KvGroup&) const = default;
};

// The groups vLLM builds from `layout` (vllm_kv_cache.hpp), or none when it
// has one full-attention, MLA or Mamba group (the engine then charges
// ceil(tokens / block_size) blocks of one group). A Mamba group's block is
// max_model_len tokens, vLLM's mamba_block_size without prefix caching.
std::vector<KvGroup> kv_groups_for(const VllmLayout& layout, std::int64_t max_model_len);

// Speculative decoding (vLLM's --speculative-config; docs/simulate.md,
// "Speculative decoding"): a decoding sequence schedules its next token
// plus `k` drafts (Request.spec_token_ids, counted in num_new_tokens and the
// token budget), the step verifies them, and the sequence keeps the
// accepted prefix of the drafts plus one token the target samples
// (rejection sampling: position i is accepted, given 1..i-1 were, with
// probability rates[i-1]); the rejected drafts' slots are computed again.
struct SpecDecode {
    std::int64_t k = 0;         // drafts per step, 0..16; 0: off
    std::vector<double> rates;  // a_1..a_k, each in [0, 1]
    // The proposer's time for one step: its k passes over `batch` sequences
    // whose contexts sum to `context_sum` (empty: free).
    std::function<double(std::int64_t batch, std::int64_t context_sum)> draft_s;
    std::uint64_t seed = 0;  // acceptance draws: the same inputs give the same run
};

struct SchedulerConfig {
    std::int64_t num_gpu_blocks = 0;
    std::int64_t block_size = 16;
    std::int64_t max_num_seqs = 256;
    std::int64_t max_num_batched_tokens = 8192;
    std::int64_t long_prefill_token_threshold = 0;  // 0: no cap
    bool prefix_caching = true;
    // Runs of identical decode steps advance without walking the batch each
    // step (docs/simulate.md, "Speed"); the same run, bit for bit, as stepping.
    bool jump_decode_runs = true;
    // The blocked queue head's prefix-cache hit is remembered until a
    // change to the pool could alter it (KvCacheManager::remember_hit); the
    // same run, bit for bit, as looking it up again every step.
    bool remember_blocked_hit = true;
    // vLLM's KV-cache groups, in its order (kv_groups_for); empty: one
    // full-attention group of block_size tokens.
    std::vector<KvGroup> groups;
    // KV offload to host memory (vLLM's OffloadingConnector, CPU spec):
    // blocks 0 leaves it off. One full-attention group only (cpu_tier.hpp).
    CpuTierConfig cpu_tier;
    SpecDecode spec;
};

// What happened to one request; times in seconds from the trace's start.
struct RequestRecord {
    double arrival_s = 0;
    double scheduled_s = -1;  // first scheduled
    double first_token_s = -1;
    double finish_s = -1;
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache, first admission
    std::int64_t preemptions = 0;
    bool rejected = false;  // needs more blocks than the whole pool
};

// vLLM's periodic log line, once per simulated second. Equal lines in a row
// are held as one point standing for `seconds` seconds from t_s on, so an idle
// stretch between arrivals is one point however long it is: the series grows
// with the engine's activity, not with the trace's span. Printers expand it.
struct TimePoint {
    double t_s = 0;            // the first whole second this point stands for
    std::int64_t seconds = 1;  // it and the seconds after it that logged the same line
    std::int64_t running = 0;
    std::int64_t waiting = 0;
    double kv_cache_usage = 0;       // blocks in use / total
    double prompt_tokens_per_s = 0;  // prefill (and recompute) tokens computed in that second
    double generation_tokens_per_s = 0;

    // The same log line, whatever second it is for.
    bool same_line(const TimePoint& o) const {
        return running == o.running && waiting == o.waiting && kv_cache_usage == o.kv_cache_usage && prompt_tokens_per_s == o.prompt_tokens_per_s &&
               generation_tokens_per_s == o.generation_tokens_per_s;
    }
};

// The simulated clock's horizon: arrivals lie within 10^7 s
// (kMaxReplaySeconds, about 116 days), and no run the simulator answers for
// keeps a request another 10^7 s, so the clock stops at 2 x 10^7 s. A clock
// past it means a step or a KV transfer priced absurdly long (a device
// bandwidth of 1 B/s, a KV link of 1e-300 GB/s), which would otherwise log
// 10^40 idle seconds.
constexpr double kSimHorizonS = 2 * kMaxReplaySeconds;
// Throws Error(Data) (exit 65) when an engine's clock `t_s` passed the
// horizon, naming `step_s`, the step that took it there (0: not known).
void check_sim_clock(double t_s, double step_s = 0);

// Appends the log line `p` for second p.t_s to `series`. A line that counted
// no tokens also stands for every later whole second up to `until` (the
// engine's state does not change between two of its events), and a line
// equal to the last one extends it. Returns the next second to sample.
double append_samples(std::vector<TimePoint>& series, TimePoint p, double until);

// The series one line per second, as the engine logs it (tests, printers).
std::vector<TimePoint> per_second(const std::vector<TimePoint>& series);

// Every gap between two tokens of one request, as (gap, how many times)
// runs: a decode step gives its whole batch the same gap, so the list holds
// about one entry per step instead of one per token. The distribution is
// that of the expanded list (metrics.cpp).
class GapCounts {
public:
    void push_back(double gap_s) { add(gap_s, 1); }
    void add(double gap_s, std::int64_t count) {
        if (count <= 0) return;
        if (!runs_.empty() && runs_.back().first == gap_s) runs_.back().second += count;
        else runs_.emplace_back(gap_s, count);
        size_ += count;
    }
    void append(const GapCounts& o) {
        for (const auto& [g, n] : o.runs_) add(g, n);
    }
    std::int64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const std::vector<std::pair<double, std::int64_t>>& runs() const { return runs_; }

private:
    std::vector<std::pair<double, std::int64_t>> runs_;
    std::int64_t size_ = 0;
};

// One engine's share of a run with several replicas.
struct ReplicaStats {
    std::int64_t requests = 0;  // routed to it
    std::int64_t steps = 0;
    std::int64_t preemptions = 0;
    std::int64_t peak_blocks_used = 0;
    std::int64_t total_blocks = 0;
};

struct SimRun {
    std::vector<RequestRecord> requests;  // in workload order
    GapCounts itl_s;                      // every gap between two tokens of one request
    std::vector<TimePoint> timeseries;
    std::int64_t steps = 0;
    std::int64_t decode_run_steps = 0;  // of which advanced as part of a decode run (jump_decode_runs)
    std::int64_t remembered_hits = 0;   // prefix-cache lookups answered from the blocked head's remembered hit (remember_blocked_hit)
    std::int64_t preemptions = 0;
    std::int64_t recomputed_tokens = 0;  // tokens computed again after preemption
    std::int64_t prompt_tokens = 0;      // prompt tokens of admitted requests (first admission)
    std::int64_t prefix_hit_tokens = 0;
    std::int64_t peak_blocks_used = 0;
    std::int64_t total_blocks = 0;
    // KV offload (SchedulerConfig::cpu_tier); zero without it.
    std::int64_t cpu_blocks = 0;      // host blocks per engine
    std::int64_t cpu_hit_tokens = 0;  // of prefix_hit_tokens, loaded from the CPU tier (first admission)
    std::int64_t offload_bytes = 0;   // copied GPU -> host (per rank)
    std::int64_t onload_bytes = 0;    // copied host -> GPU (per rank)
    // Speculative decoding (SchedulerConfig::spec): sequence-steps that
    // verified drafts, the drafts they verified and accepted, and the tokens
    // they kept (accepted + the sampled one, cut at the request's end).
    std::int64_t spec_verifies = 0, spec_drafts = 0, spec_accepted = 0, spec_kept_tokens = 0;
    double end_s = 0;
    std::vector<ReplicaStats> replicas;  // one per engine (simulate_cluster); empty from simulate()
    std::vector<ReplicaStats> dp_ranks;  // one per data-parallel rank of every replica (dp_group.hpp); else empty
};

using StepPricer = std::function<double(const std::vector<SeqWork>&)>;
// The price of a decode step of `batch` sequences whose contexts sum to
// `context_sum`: exactly what the StepPricer gives for that batch, or
// nullopt when it cannot say (the engine then steps one by one).
using DecodePricer = std::function<std::optional<double>(std::int64_t batch, std::int64_t context_sum)>;
// Pipeline parallelism: one pricer per stage, each giving that stage's time
// for a batch (its layers, the send to the next stage). Empty: no pipeline.
using StagePricers = std::vector<StepPricer>;

// Replays `w` (arrivals sorted). Throws Error(Usage) for a config that
// cannot run (no blocks, a zero budget). `check_invariants` checks the
// engine's invariants (docs/invariants.md) after every step (tests; costs a
// pass over the pool and the requests held). Without
// a DecodePricer every step is priced by `price` (no decode-run jumps).
// With `stages` (two or more) the engine is a pipeline (VllmEngine below).
SimRun simulate(const Workload& w, const SchedulerConfig& c, const StepPricer& price, bool check_invariants = false);
SimRun simulate(const Workload& w, const SchedulerConfig& c, const StepPricer& price, const DecodePricer& decode, bool check_invariants = false,
                const StagePricers& stages = {});

// A request's blocks in one KV-cache group.
struct GroupBlocks {
    std::vector<std::int64_t> blocks;   // block ids, in token order; -1: a null block (outside the window, freed)
    std::int64_t skipped = 0;           // leading null blocks
    std::int64_t hashed = 0;            // leading blocks registered in the prefix cache
    std::vector<std::uint64_t> hashes;  // the chained hashes of its shared blocks computed so far (at this block size)
    std::int64_t shared_blocks = -1;    // leading blocks others may share (-1: not counted yet)
    std::vector<std::int64_t> own;      // per block past those: the block caching its content (-1: none)
    // Whether `own` is kept (and its blocks tagged): always for windowed
    // groups, which free blocks mid-run; for a full-attention group from the
    // request's first preemption on (before, its block table is the map).
    bool own_kept = false;
};

// A request's state inside the engine that serves it.
struct LiveRequest {
    std::int64_t computed = 0;   // tokens whose KV is in the cache
    std::int64_t generated = 0;  // output tokens sampled so far
    double last_token_s = 0;
    std::int64_t cpu_loaded = 0;  // tokens its last load from the CPU tier brought (KV offload)
    std::vector<GroupBlocks> kv;  // one per KV-cache group (filled when first needed)
};

// The state of every request of a workload, shared by the engines that
// serve them (each request lives in exactly one).
struct RequestStates {
    std::vector<RequestRecord> records;
    std::vector<LiveRequest> live;
};

// Every request as it stands before it arrives.
RequestStates request_states(const Workload& w);
void check_scheduler_config(const SchedulerConfig& c);

// A step as a scheduler plans it (vLLM's SchedulerOutput): each sequence's
// new tokens, the work the pricer sees, the proposer's time. The engine's
// schedule() returns it and its commit(plan, dt) runs it; the driver holds
// it in between (and prices it).
struct StepPlan {
    std::vector<std::pair<std::size_t, std::int64_t>> seqs;  // (request, new tokens), in schedule order
    std::vector<SeqWork> work;                               // per sequence: (context before, new tokens)
    double draft_s = 0;                                      // speculative decoding's proposer
    bool empty() const { return work.empty(); }
};

class VllmEngine;

// Checks the engine's invariants (docs/invariants.md, INV-1 to INV-7) as it
// stands; throws std::logic_error, its message starting with the violated
// invariant's id. The engine runs it after every step when checking is on.
void check_invariants(const VllmEngine& e);

// One vLLM V1 engine (the rules above). It is handed its requests one by one
// (add), and advanced up to a time: simulate() drives one, simulate_cluster
// (cluster.hpp) several behind a router.
//
// With two or more `stages`, the engine runs vLLM's batch queue
// (vllm/v1/engine/core.py, step_with_batch_queue, batch_queue_size =
// max_concurrent_batches = pipeline_parallel_size): it schedules a new batch
// whenever fewer than P are in flight, a request whose last batch has not
// come back being skipped (it has no token to compute) while a prefill can
// send its next chunk; it blocks on the oldest batch when the queue is full
// or nothing could be scheduled. A batch's stage j starts when its stage
// j - 1 ends and stage j is done with the batch before (a flow shop); its
// tokens are sampled when it leaves the last stage. Decode-run jumps are off.
class VllmEngine {
public:
    VllmEngine(const Workload& w, const SchedulerConfig& c, const StepPricer& price, const DecodePricer& decode, bool check, RequestStates& states,
               const StagePricers& stages = no_stages());
    ~VllmEngine();
    VllmEngine(VllmEngine&&) noexcept;
    VllmEngine(const VllmEngine&) = delete;
    VllmEngine& operator=(const VllmEngine&) = delete;
    VllmEngine& operator=(VllmEngine&&) = delete;

    // Request r arrives at states.records[r].arrival_s (not before the last one added).
    void add(std::size_t r);
    // When its next step starts; nullopt when it has nothing to do.
    std::optional<double> next_step_s() const;
    // Runs the steps that start before `horizon`, taking arrivals as they
    // come. With `stop_on_done`, returns after the first step (or pass) in
    // which a request finished or was rejected: a closed loop's clients
    // send their next request then.
    void advance(double horizon, bool stop_on_done);
    // Requests routed here, arrived by time t and not finished by then (t at
    // or after the start of its last step).
    std::int64_t outstanding_at(double t) const;
    std::int64_t done() const;
    double now() const;
    // Its steps, preemptions, ITL, series and pool figures (requests empty).
    const SimRun& totals() const;
    SimRun take_totals();

    static const StagePricers& no_stages();

    // Lockstep, as one data-parallel rank of a DP group (dp_group.hpp): the
    // group moves every rank's clock to the wave's start, each rank
    // schedules its step, the group prices them together as one forward
    // pass, and each rank commits it (or idles through it). No pipeline;
    // advance() is not used. With a CPU tier or remote prefill, a rank whose
    // queue head waits for a load plans nothing until next_step_s().
    // advance() and the pipeline drive the same scheduler pass and commit.
    // Nothing routed here and waiting, running or loading.
    bool idle() const;
    std::int64_t waiting_count() const;
    std::int64_t running_count() const;
    // Moves the clock to t (not before now()), logging the seconds crossed.
    void sync_to(double t);
    // Schedules the step at now(), the requests that arrived by then queued
    // first; empty when there is nothing to run (the wave finds it idle).
    // Its work and proposer's time are what the driver prices.
    StepPlan schedule();
    // Ends the step `p` (this engine's last schedule()) dt after now();
    // idle_step: the wave passed with nothing planned (the rank ran a dummy
    // batch, not a step of its own).
    void commit(const StepPlan& p, double dt);
    void idle_step(double dt);

    // Disaggregated decode (disagg.hpp): every request added is one whose
    // prompt a prefill instance computed. Admitted, it gets the blocks for its
    // whole prompt and waits (vLLM's WAITING_FOR_REMOTE_KVS) until the time
    // `load(r, tokens, start_s)` gives; then it computes its last prompt token
    // and decodes. Set before the first add.
    using RemoteLoad = std::function<double(std::size_t r, std::int64_t tokens, double start_s)>;
    void set_remote_prefill(RemoteLoad load);

private:
    // The scheduler's state and rules (vllm_engine_impl.hpp, internal to
    // src/core/sim), as SglangEngine keeps its own.
    class Impl;
    std::unique_ptr<Impl> impl_;
    friend void check_invariants(const VllmEngine& e);
};

}  // namespace kvplan
