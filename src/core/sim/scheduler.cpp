#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "core/checked.hpp"
#include "core/checked_conversion.hpp"
#include "core/error.hpp"
#include "core/memory/vllm_kv_cache.hpp"
#include "core/sim/block_pool.hpp"
#include "core/sim/drive.hpp"
#include "core/sim/vllm_engine_impl.hpp"

namespace kvplan {

RequestStates request_states(const Workload& w) {
    RequestStates states;
    states.records.resize(w.requests.size());
    states.live.resize(w.requests.size());
    for (std::size_t i = 0; i < w.requests.size(); ++i) {
        states.records[i].arrival_s = w.requests[i].arrival_s;
        states.records[i].input_tokens = w.requests[i].input_tokens;
        states.records[i].output_tokens = w.requests[i].output_tokens;
    }
    return states;
}

std::vector<KvGroup> kv_groups_for(const VllmLayout& layout, std::int64_t max_model_len) {
    std::vector<KvGroup> groups;
    if (layout.uniform_type) return groups;  // one group; a block id covers every layer's page
    for (const VllmGroup& g : layout.groups) {
        KvGroup k;
        k.block_tokens = g.block_tokens;
        switch (g.spec.kind) {
            case LayerKind::Sliding:
                k.kind = KvGroupKind::Sliding;
                k.window_tokens = g.spec.window_tokens;
                break;
            case LayerKind::Chunked:
                k.kind = KvGroupKind::Chunked;
                k.window_tokens = g.spec.window_tokens;
                break;
            case LayerKind::State:
                k.kind = KvGroupKind::Mamba;
                k.block_tokens = std::max<std::int64_t>(1, max_model_len);
                break;
            default: break;  // full attention and MLA
        }
        groups.push_back(k);
    }
    if (groups.size() == 1 && (groups[0].kind == KvGroupKind::Full || groups[0].kind == KvGroupKind::Mamba)) groups.clear();
    return groups;
}

void check_scheduler_config(const SchedulerConfig& c) {
    if (c.num_gpu_blocks <= 0) usage_error("simulate: the KV pool has no blocks");
    if (c.block_size <= 0 || c.max_num_seqs <= 0 || c.max_num_batched_tokens <= 0)
        usage_error("simulate: block size, max_num_seqs and max_num_batched_tokens must be positive");
    for (const KvGroup& g : c.groups) {
        if (g.block_tokens <= 0) usage_error("simulate: a KV-cache group's block size must be positive");
        if ((g.kind == KvGroupKind::Sliding || g.kind == KvGroupKind::Chunked) && g.window_tokens <= 0)
            usage_error("simulate: a sliding-window or chunked KV-cache group needs a positive window");
        // vLLM turns prefix caching off by default for hybrid Mamba models
        // (engine/arg_utils.py: default_prefix_caching is false when
        // model_config.is_hybrid); its opt-in Mamba cache modes are not modelled.
        if (g.kind == KvGroupKind::Mamba && c.prefix_caching)
            usage_error("simulate: prefix caching with a Mamba KV-cache group is not simulated (vLLM's default turns it off)");
    }
    if (c.spec.k < 0 || c.spec.k > 16) usage_error("simulate: speculative decoding takes 1 to 16 draft tokens");
    if (static_cast<std::int64_t>(c.spec.rates.size()) != c.spec.k) usage_error("simulate: one acceptance rate per draft position");
    for (double a : c.spec.rates)
        if (!(a >= 0 && a <= 1)) usage_error("simulate: an acceptance rate must be in [0, 1]");
    if (c.cpu_tier.blocks > 0) {
        // The CPU tier is keyed by the prefix cache's block hashes; with
        // several KV-cache groups vLLM offloads in blocks of their lcm
        // (kv_offload/spec.py), which is not simulated.
        if (!c.groups.empty()) usage_error("--cpu-offload: only models with one full-attention KV-cache group are simulated");
        if (!c.prefix_caching) usage_error("--cpu-offload: the CPU tier is keyed by prefix-cache block hashes; drop --no-prefix-caching");
    }
}

VllmEngine::Impl::Impl(const Workload& w, const SchedulerConfig& c, const StepPricer& price, const DecodePricer& decode, bool check,
                       RequestStates& states, const StagePricers& stages)
    : w_(w), c_(c), price_(price), decode_(decode), stages_(stages), check_(check), records_(states.records), live_(states.live),
      kv_cache_(w, c_, states.live, run_.peak_blocks_used) {
    run_.total_blocks = c.num_gpu_blocks;
    if (stages.size() == 1) throw std::logic_error("a pipeline of one stage: pass no stage pricers");
    if (c.cpu_tier.blocks > 0) {
        if (!stages.empty()) usage_error("--cpu-offload: KV offload with pipeline parallelism is not simulated; pass --pp 1");
        auto offload = std::make_unique<CpuOffloadConnector>(c_.cpu_tier, c_.block_size, kv_cache_, run_);
        offload_ = offload.get();
        connector_ = std::move(offload);
        run_.cpu_blocks = c.cpu_tier.blocks;
    }
    if (c.spec.k > 0 && !stages.empty()) usage_error("--spec-method: speculative decoding with pipeline parallelism is not simulated; pass --pp 1");
    stage_free_s_.assign(stages.size(), 0.0);
}

const StagePricers& VllmEngine::no_stages() {
    static const StagePricers none;
    return none;
}

VllmEngine::Impl::~Impl() = default;

std::int64_t VllmEngine::Impl::cap(std::int64_t n, std::int64_t budget) const {
    if (c_.long_prefill_token_threshold > 0) n = std::min(n, c_.long_prefill_token_threshold);
    return std::min(n, budget);
}

void VllmEngine::Impl::preempt(std::size_t r) {
    if (c_.prefix_caching) kv_cache_.keep_own_blocks(r);
    run_.preemptions += 1;
    records_[r].preemptions += 1;
    run_.recomputed_tokens += live_[r].computed;
    kv_cache_.free(r);
    live_[r].computed = 0;
    waiting_.push_front(r);
}

void VllmEngine::Impl::add(std::size_t r) {
    inbox_.push_back(r);
    ++added_;
}

void VllmEngine::Impl::arrive() {
    while (!inbox_.empty() && records_[inbox_.front()].arrival_s <= t_) {
        waiting_.push_back(inbox_.front());
        inbox_.pop_front();
    }
    if (remote_) collect_loaded();
}

// Whether schedule_waiting would admit nobody whatever the pool holds: the
// queue is empty, max_num_seqs run, or the running requests take the
// whole token budget (one token each in a decode run).
bool VllmEngine::Impl::admission_blocked() const {
    const auto n = static_cast<std::int64_t>(running_.size());
    return waiting_.empty() || n >= c_.max_num_seqs || n >= c_.max_num_batched_tokens;
}

// Returns false when a request was preempted this step.
bool VllmEngine::Impl::schedule_running(StepPlan& p, std::int64_t& budget) {
    bool preempted = false;
    for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
        const std::size_t r = running_[i];
        // A decode carries k drafts, cut by the budget as vLLM cuts
        // num_new_tokens (the spec tokens beyond it are not scheduled).
        const std::int64_t drafts = c_.spec.k > 0 && decoding(r) ? c_.spec.k : 0;
        const std::int64_t n = cap(total_tokens(r) + drafts - live_[r].computed, budget);
        if (n <= 0) continue;
        bool scheduled = true;
        while (!kv_cache_.allocate_slots(r, n)) {
            const std::size_t victim = running_.back();
            running_.pop_back();
            preempt(victim);
            preempted = true;
            if (victim == r) {
                scheduled = false;
                break;
            }
        }
        if (!scheduled) break;
        p.seqs.push_back({r, n});
        budget -= n;
    }
    return !preempted;
}

// A waiting request: its cached prefix, then its first chunk. False when its
// blocks cannot be had (the admission stops there).
bool VllmEngine::Impl::admit(std::size_t r, StepPlan& p, std::int64_t& budget) {
    LiveRequest& l = live_[r];
    // Its prompt and every output token but the last (whose KV is never
    // written) must fit the whole pool, or it would preempt itself forever.
    // vLLM refuses such a pool at start-up (max_model_len must fit,
    // kv_cache_utils.py _check_enough_kv_cache_memory); a pool set with
    // --num-gpu-blocks can be smaller, and then the request is rejected.
    if (kv_cache_.worst_blocks(w_.requests[r].input_tokens + w_.requests[r].output_tokens - 1) > kv_cache_.pool().total()) {
        records_[r].rejected = true;
        waiting_.pop_front();
        ++done_;
        return true;
    }
    if (remote_ && remote_state_[r] != 3) return admit_remote(r, p, budget);
    const bool first = records_[r].scheduled_s < 0;  // not a preempted request coming back
    // At most all but the last token: its logits must be computed (get_computed_blocks).
    KvCacheManager::Hits hits = c_.prefix_caching ? kv_cache_.get_computed_blocks(r, total_tokens(r) - 1)
                                                  : KvCacheManager::Hits{0, std::vector<std::vector<std::int64_t>>(kv_cache_.groups().size())};
    const std::int64_t cached = hits.tokens;
    // Not admitted: the queue's head keeps its hit for the next pass.
    const auto blocked = [&] {
        if (c_.prefix_caching) kv_cache_.remember_hit(r, total_tokens(r) - 1, hits);
        return false;
    };
    if (offload_) {
        // get_num_new_matched_tokens: the blocks right after the GPU hit
        // that the CPU tier holds are loaded first, asynchronously.
        const std::int64_t more = offload_->get_num_new_matched_tokens(r, cached, total_tokens(r), t_) / c_.block_size;
        if (more > 0) return start_load(r, hits, more) || blocked();
    }
    const std::int64_t n = cap(total_tokens(r) - cached, budget);
    if (n <= 0) return blocked();
    // allocate_slots with the hit as new_computed_blocks (kv_cache_manager.py).
    if (!kv_cache_.allocate_slots(r, hits, n)) return blocked();
    if (first) {
        run_.prompt_tokens += w_.requests[r].input_tokens;
        run_.prefix_hit_tokens += cached;
        run_.cpu_hit_tokens += std::min(l.cpu_loaded, cached);
        records_[r].cached_tokens = cached;
        records_[r].scheduled_s = t_;
    }
    waiting_.pop_front();
    running_.push_back(r);
    p.seqs.push_back({r, n});
    budget -= n;
    return true;
}

void VllmEngine::Impl::schedule_waiting(StepPlan& p, std::int64_t& budget) {
    if (offload_ && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_num_seqs) finish_loads();
    // Disaggregated decode: a preempted head that cannot finish in the free
    // blocks lets the loaded requests behind it go first (disagg.cpp).
    if (remote_ && running_.empty() && !waiting_.empty() && head_starved()) admit_loaded_behind_head(p, budget);
    while (!waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_num_seqs)
        if (!admit(waiting_.front(), p, budget)) break;
    if (remote_ && running_.empty() && p.seqs.empty() && !waiting_.empty()) admit_loaded_behind_head(p, budget);
}

// Full blocks of a request enter the prefix cache once their KV is computed
// (cache_full_blocks), and the CPU tier's store once they are full.
void VllmEngine::Impl::register_full_blocks(std::size_t r) {
    const auto [from, to] = kv_cache_.cache_full_blocks(r);
    if (offload_) offload_->store(r, from, to, t_);  // one group only with a CPU tier
}

void check_sim_clock(double t_s, double step_s) {
    if (t_s <= kSimHorizonS) return;
    std::ostringstream m;
    m << "simulate: the simulated clock passed its horizon of 2 x 10^7 s (it reached " << t_s << " s";
    if (step_s > 0) m << "; one step took " << step_s << " s";
    m << "): a step or a KV transfer is priced absurdly long; check the device's memory bandwidth and FLOP/s, "
         "the efficiency figures, the KV link and --expert-imbalance";
    data_error(m.str());
}

double append_samples(std::vector<TimePoint>& series, TimePoint p, double until) {
    if (!(p.t_s <= until) || !std::isfinite(until)) throw std::logic_error("a sample past the time it was taken at");
    check_sim_clock(until);
    p.seconds = 1;
    if (p.prompt_tokens_per_s == 0 && p.generation_tokens_per_s == 0) {
        // Whole seconds t_s, t_s + 1, ... up to `until`; integers below 2^53
        // add exactly, so the two corrections settle any rounding of the cast.
        std::int64_t k = checked_trunc(until - p.t_s, "a span of logged seconds");
        while (k > 0 && p.t_s + static_cast<double>(k) > until) --k;
        while (p.t_s + static_cast<double>(k + 1) <= until) ++k;
        p.seconds = k + 1;
    }
    if (!series.empty() && series.back().same_line(p) && series.back().t_s + static_cast<double>(series.back().seconds) == p.t_s)
        series.back().seconds += p.seconds;
    else series.push_back(p);
    return p.t_s + static_cast<double>(p.seconds);
}

std::vector<TimePoint> per_second(const std::vector<TimePoint>& series) {
    std::vector<TimePoint> out;
    for (const TimePoint& p : series)
        for (std::int64_t k = 0; k < p.seconds; ++k) {
            TimePoint q = p;
            q.t_s = p.t_s + static_cast<double>(k);
            q.seconds = 1;
            out.push_back(q);
        }
    return out;
}

// vLLM's log line for every whole second the step crossed.
void VllmEngine::Impl::sample(double until) {
    while (next_sample_ <= until) {
        TimePoint p;
        p.t_s = next_sample_;
        p.running = static_cast<std::int64_t>(running_.size());
        // vLLM counts WAITING_FOR_REMOTE_KVS as waiting (CPU loads and remote prefills alike).
        p.waiting = static_cast<std::int64_t>(waiting_.size()) + loading_count();
        p.kv_cache_usage =
            kv_cache_.pool().total() > 0 ? static_cast<double>(kv_cache_.pool().used()) / static_cast<double>(kv_cache_.pool().total()) : 0;
        p.prompt_tokens_per_s = interval_prompt_;
        p.generation_tokens_per_s = interval_generation_;
        interval_prompt_ = interval_generation_ = 0;
        next_sample_ = append_samples(run_.timeseries, p, until);
    }
}

// How many of r's `drafts` drafts the step accepts: position i with
// probability rates[i-1] given the ones before it were, drawn from a hash of
// the seed, the request and the step, so that a run is reproducible.
std::int64_t VllmEngine::Impl::accepted_drafts(std::size_t r, std::int64_t drafts) const {
    std::uint64_t x = mix(mix(c_.spec.seed, static_cast<std::uint64_t>(r)), static_cast<std::uint64_t>(run_.steps));
    for (std::int64_t i = 0; i < drafts; ++i) {
        x = splitmix(x);
        const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // uniform in [0, 1)
        if (!(u < c_.spec.rates[static_cast<std::size_t>(i)])) return i;
    }
    return drafts;
}

// A decode step of 1 + d tokens verified d drafts: r keeps the accepted
// ones and the token the target samples after them, at most what its output
// still needs (the rest is discarded, as max_tokens stops vLLM's request);
// the rejected drafts' slots count as not computed (num_computed_tokens -=
// num_rejected, scheduler.py update_from_output).
void VllmEngine::Impl::keep_spec_tokens(std::size_t r, std::int64_t n) {
    LiveRequest& l = live_[r];
    const std::int64_t accepted = accepted_drafts(r, n - 1);
    const std::int64_t kept = std::min(accepted + 1, w_.requests[r].output_tokens - l.generated);
    run_.spec_verifies += 1;
    run_.spec_drafts += n - 1;
    run_.spec_accepted += accepted;
    run_.spec_kept_tokens += kept;
    l.computed += kept;
    if (c_.prefix_caching) register_full_blocks(r);
    l.generated += kept;
    interval_generation_ += static_cast<double>(kept);
    run_.itl_s.push_back(t_ - l.last_token_s);  // the kept tokens arrive together, one gap (vllm bench serve's ITL per chunk)
    l.last_token_s = t_;
    if (l.generated >= w_.requests[r].output_tokens) finished_.push_back(r);
}

// Scheduler.schedule() (vllm/v1/core/sched/scheduler.py), one pass into
// `p` (cleared first): the running requests first, then the waiting ones
// while no running one was preempted, within the step's token budget; then
// the plan's work, as the pricer sees it, and its proposer's time. Every
// driver plans its steps here (advance, the pipeline, schedule()).
void VllmEngine::Impl::plan(StepPlan& p) {
    p.seqs.clear();
    p.work.clear();
    p.draft_s = 0;
    std::int64_t budget = c_.max_num_batched_tokens;
    if (schedule_running(p, budget)) schedule_waiting(p, budget);
    std::int64_t spec_seqs = 0, spec_context = 0;
    for (const auto& [r, n] : p.seqs) {
        p.work.push_back(SeqWork{live_[r].computed, n});
        if (c_.spec.k > 0 && decoding(r)) {
            spec_seqs += 1;
            spec_context += live_[r].computed;
        }
    }
    // The proposer runs after the target's forward pass, in the same engine
    // step (gpu_model_runner.py, propose_draft_token_ids).
    p.draft_s = spec_seqs > 0 && c_.spec.draft_s ? c_.spec.draft_s(spec_seqs, spec_context) : 0.0;
}

// INV-7's figures for the step just planned.
void VllmEngine::Impl::note_plan(const StepPlan& p) {
    planned_seqs_ = static_cast<std::int64_t>(p.seqs.size());
    planned_tokens_ = 0;
    for (const auto& [r, n] : p.seqs) planned_tokens_ += n;
}

void VllmEngine::Impl::sync_to(double t) {
    if (!(t >= t_)) throw std::logic_error("lockstep: a rank's clock moved back");
    t_ = t;
    sample(t_);
}

// The step at now() for a driver that prices it itself (a DP group's wave):
// the requests that arrived by now queued first, then passes of plan()
// until one schedules something, the engine idles (idle_until), or the
// queue's head waits for a load (wait_for_loads); a pass that only
// rejected requests is followed by another at once, as advance() does.
StepPlan VllmEngine::Impl::schedule() {
    if (!stages_.empty()) throw std::logic_error("lockstep: a rank with a pipeline");
    plan_done_before_ = done_;
    arrive();
    StepPlan p;
    for (;;) {
        if (idle_until()) {
            p.seqs.clear();
            p.work.clear();
            return p;
        }
        const std::int64_t done_before = done_;
        plan(p);
        if (!p.empty()) return p;
        // A request preempted itself or was rejected: the queue's head meets
        // an empty pool, which admits or rejects it next pass (as advance()).
        if (!running_.empty()) throw std::logic_error("the scheduler found nothing to run");
        if (done_ == done_before) {
            wait_for_loads();
            return p;
        }
    }
}

void VllmEngine::Impl::idle_step(double dt) {
    if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a wave priced at a non-positive time");
    last_step_start_ = t_;
    t_ += dt;
    check_sim_clock(t_, dt);
    last_step_done_ = done_ - plan_done_before_;  // rejected while planning
    sample(t_);
}

// scheduler.py update_from_output: the planned step `p` ends dt from now.
void VllmEngine::Impl::commit(const StepPlan& p, double dt) {
    if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a step priced at a non-positive time");
    if (check_) note_plan(p);
    last_step_start_ = t_;
    t_ += dt;
    check_sim_clock(t_, dt);
    run_.steps += 1;
    finished_.clear();
    for (const auto& [r, n] : p.seqs) {
        LiveRequest& l = live_[r];
        if (c_.spec.k > 0 && decoding(r)) {
            keep_spec_tokens(r, n);
            continue;
        }
        const bool decode = n == 1 && decoding(r);
        if (!decode) interval_prompt_ += static_cast<double>(n);
        l.computed += n;
        if (c_.prefix_caching) register_full_blocks(r);
        if (l.computed < total_tokens(r)) continue;  // a prefill chunk: no token yet
        // The step that reaches the last token samples the next one.
        RequestRecord& rec = records_[r];
        l.generated += 1;
        interval_generation_ += 1;
        if (rec.first_token_s < 0) rec.first_token_s = t_;
        else if (l.generated > 1) run_.itl_s.push_back(t_ - l.last_token_s);
        l.last_token_s = t_;
        if (l.generated >= w_.requests[r].output_tokens) finished_.push_back(r);
    }
    finish_requests();
    sample(t_);
    last_step_done_ = done_ - plan_done_before_;  // lockstep's count; advance() sets its own after
    if (check_) check_invariants();
}

// The requests in finished_ leave at t_, their blocks freed.
void VllmEngine::Impl::finish_requests() {
    for (std::size_t r : finished_) {
        records_[r].finish_s = t_;
        if (connector_) connector_->request_finished(r);
        kv_cache_.free(r);
        live_[r].kv = {};
        ++done_;
    }
    if (!finished_.empty()) std::erase_if(running_, [&](std::size_t r) { return records_[r].finish_s >= 0; });
}

// Pipeline: the batch just scheduled (p) enters stage 0. Its tokens
// count as computed now, as vLLM's scheduler advances num_computed_tokens
// when it schedules (_update_after_schedule): a request whose output is in
// flight then has no token left to compute and is skipped, and a chunked
// prefill can send its next chunk in the next batch.
void VllmEngine::Impl::submit_batch(const StepPlan& p) {
    if (check_) note_plan(p);
    InFlight b;
    double ready = t_;  // stage 0 may start once scheduled
    for (std::size_t j = 0; j < stages_.size(); ++j) {
        const double dt = stages_[j](p.work);
        if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a pipeline stage priced at a non-positive time");
        const double start = std::max(ready, stage_free_s_[j]);
        ready = stage_free_s_[j] = start + dt;
        check_sim_clock(ready, dt);
    }
    b.end_s = ready;
    for (const auto& [r, n] : p.seqs) {
        LiveRequest& l = live_[r];
        const bool decode = n == 1 && l.generated > 0 && l.computed + 1 == total_tokens(r);
        if (!decode) b.prompt_tokens += static_cast<double>(n);
        l.computed += n;
        if (c_.prefix_caching) register_full_blocks(r);
        b.items.push_back(InFlight::Item{r, records_[r].preemptions, l.computed == total_tokens(r)});
    }
    last_step_start_ = t_;
    run_.steps += 1;
    in_flight_.push_back(std::move(b));
}

// Pipeline: the oldest batch leaves the last stage; its requests sample
// their tokens (update_from_output), but for one preempted while it was in
// flight, whose output is dropped (it is computed again from the start).
void VllmEngine::Impl::complete_batch() {
    InFlight b = std::move(in_flight_.front());
    in_flight_.pop_front();
    t_ = std::max(t_, b.end_s);
    interval_prompt_ += b.prompt_tokens;
    finished_.clear();
    for (const InFlight::Item& it : b.items) {
        if (!it.samples || records_[it.r].preemptions != it.preemptions) continue;
        LiveRequest& l = live_[it.r];
        RequestRecord& rec = records_[it.r];
        l.generated += 1;
        interval_generation_ += 1;
        if (rec.first_token_s < 0) rec.first_token_s = t_;
        else if (l.generated > 1) run_.itl_s.push_back(t_ - l.last_token_s);
        l.last_token_s = t_;
        if (l.generated >= w_.requests[it.r].output_tokens) finished_.push_back(it.r);
    }
    finish_requests();
    sample(t_);
}

// step_with_batch_queue as a loop of events: schedule a batch at t_ while
// fewer than P are in flight and the last try found something; otherwise
// block until the oldest comes back. Batches are scheduled before
// `horizon`, and come back at or before it.
void VllmEngine::Impl::advance_pipeline(double horizon, bool stop_on_done) {
    const std::size_t depth = stages_.size();
    StepPlan plan;  // its buffers kept from batch to batch
    for (;;) {
        arrive();
        const bool work = !running_.empty() || !waiting_.empty();
        if (work && !stalled_ && in_flight_.size() < depth) {
            if (t_ >= horizon) return;
            const std::int64_t done_before = done_;
            this->plan(plan);
            if (!plan.empty()) submit_batch(plan);
            else if (!in_flight_.empty()) stalled_ = true;  // all in flight, or no blocks: wait for a batch
            else if (!running_.empty()) throw std::logic_error("the scheduler found nothing to run");
            if (check_) check_invariants();
            if (stop_on_done && done_ != done_before) return;  // rejected
            continue;
        }
        if (!in_flight_.empty()) {
            if (in_flight_.front().end_s > horizon) return;
            const std::int64_t done_before = done_;
            complete_batch();
            stalled_ = false;
            if (check_) check_invariants();
            if (stop_on_done && done_ != done_before) return;
            continue;
        }
        if (work) throw std::logic_error("the pipeline stalled with no batch in flight");
        // Idle: jump to the next arrival (a pipeline has no CPU tier or remote prefill).
        if (!jump_idle(next_event_s(), horizon)) return;
    }
}

// How many decode steps can run as one: every running request is decoding
// (one token to compute, a token sampled before), and the run ends before
// the step that gives any of them its last token (stepped, so that it
// finishes and frees as usual). 0 when no run can start. Also gives the sum
// of the contexts. O(batch), once per run.
std::int64_t VllmEngine::Impl::decode_run_length(std::int64_t& context_sum) const {
    if (running_.empty() || !admission_blocked()) return 0;
    // The newest request is the likeliest to be prefilling: look at it first.
    const auto decoding = [&](std::size_t r) { return live_[r].generated > 0 && live_[r].computed + 1 == total_tokens(r); };
    if (!decoding(running_.back())) return 0;
    std::int64_t left = std::numeric_limits<std::int64_t>::max();
    context_sum = 0;
    for (std::size_t r : running_) {
        if (!decoding(r)) return 0;
        left = std::min(left, w_.requests[r].output_tokens - live_[r].generated);
        context_sum = checked_add(context_sum, live_[r].computed);
    }
    return left - 1;
}

// A run of decode steps (docs/simulate.md, "Speed"), each exactly the step
// the scheduler would make: every running request computes one token and
// samples one. What stepping does per request is done per step in O(1)
// instead, except where a request crosses into a new block: the running
// requests are bucketed by context mod block size, so the bucket whose
// context reaches a block boundary at step k is found in O(1), and its
// blocks are allocated (and the ones filled registered in the prefix cache)
// in running order, as stepping would. The run stops before a step that
// starts at or after `horizon`, one that would admit an arrival, one whose
// new blocks the pool cannot supply (stepping then preempts), and one the
// decode pricer cannot price exactly. The clock advances step by step, t +=
// dt, so every time is the same double stepping computes. Returns whether a
// step ran.
bool VllmEngine::Impl::decode_run(double horizon) {
    // Its O(1) block accounting is one full-attention group's; other models
    // (windows freeing blocks, several groups) step one by one.
    if (kv_cache_.groups().size() != 1 || kv_cache_.groups()[0].kind != KvGroupKind::Full) return false;
    if (offload_ && offload_->receiving()) return false;  // a load ending would admit a request mid-run
    std::int64_t context_sum = 0;
    const std::int64_t max_steps = decode_run_length(context_sum);
    if (max_steps <= 0) return false;
    const auto batch = static_cast<std::int64_t>(running_.size());
    const auto bs = static_cast<std::size_t>(c_.block_size);
    if (by_phase_.size() != bs) by_phase_.assign(bs, {});
    for (std::size_t r : running_) by_phase_[static_cast<std::size_t>(live_[r].computed % c_.block_size)].push_back(r);
    // The requests whose context is at a block boundary k steps into the run.
    const auto at_boundary = [&](std::int64_t k) -> std::vector<std::size_t>& {
        return by_phase_[(bs - static_cast<std::size_t>(k % c_.block_size)) % bs];
    };
    std::int64_t k = 0;
    for (; k < max_steps; ++k) {
        if (k > 0) {
            arrive();
            if (t_ >= horizon || !admission_blocked()) break;
        }
        std::vector<std::size_t>& crossing = at_boundary(k);
        if (static_cast<std::int64_t>(crossing.size()) > kv_cache_.pool().free_count()) break;
        const std::optional<double> dt = decode_(batch, checked_add(context_sum, checked_mul(k, batch)));
        if (!dt) break;
        if (!(*dt > 0) || !std::isfinite(*dt)) throw std::logic_error("a step priced at a non-positive time");
        for (std::size_t r : crossing) kv_cache_.kv(r, 0).blocks.push_back(kv_cache_.pool().allocate());
        kv_cache_.note_peak();
        const double start = t_;
        last_step_start_ = t_;
        t_ += *dt;
        check_sim_clock(t_, *dt);
        run_.steps += 1;
        run_.decode_run_steps += 1;
        if (c_.prefix_caching)
            for (std::size_t r : at_boundary(k + 1)) {  // their last block is now full
                GroupBlocks& l = kv_cache_.kv(r, 0);
                if (!kv_cache_.own_lazy(r, 0) || l.hashed < kv_cache_.shared_blocks(r, 0)) kv_cache_.cache_block(r, 0, l.hashed);
                if (offload_) offload_->store(r, l.hashed, l.hashed + 1, t_);
                ++l.hashed;
            }
        // Every request's last token came with the previous step, except on
        // the run's first step (their own times).
        if (k == 0)
            for (std::size_t r : running_) run_.itl_s.push_back(t_ - live_[r].last_token_s);
        else run_.itl_s.add(t_ - start, batch);
        interval_generation_ += static_cast<double>(batch);
        last_step_done_ = 0;
        sample(t_);
        if (check_) check_invariants();
    }
    for (std::size_t r : running_) {
        LiveRequest& l = live_[r];
        l.computed += k;
        l.generated += k;
        if (k > 0) l.last_token_s = t_;
    }
    for (auto& bucket : by_phase_) bucket.clear();
    return k > 0;
}

// The single engine's driver: passes of plan() and commit(), each step
// priced here, with the idle jumps between them. A pass that only rejects
// requests ends the pass (a closed loop's clients send their next request
// then, before the next step), where schedule() plans on.
void VllmEngine::Impl::advance(double horizon, bool stop_on_done) {
    if (!stages_.empty()) return advance_pipeline(horizon, stop_on_done);
    StepPlan plan;  // its buffers kept from step to step
    for (;;) {
        arrive();
        if (const std::optional<double> wake = idle_until()) {
            if (!jump_idle(*wake, horizon)) return;
            continue;
        }
        if (t_ >= horizon) return;
        const std::int64_t done_before = done_;
        // A run of speculative steps is not identical step to step (each keeps a drawn number of tokens).
        if (c_.jump_decode_runs && decode_ && c_.spec.k == 0 && decode_run(horizon)) continue;  // a run finishes nothing
        this->plan(plan);
        if (plan.empty()) {
            // A request preempted itself or was rejected: the queue's head
            // now meets an empty pool, which admits or rejects it next pass.
            if (!running_.empty()) throw std::logic_error("the scheduler found nothing to run");
            if (done_ == done_before) {
                wait_for_loads();  // the next pass jumps to the load's end
                continue;
            }
        } else {
            commit(plan, price_(plan.work) + plan.draft_s);
        }
        last_step_done_ = done_ - done_before;  // finished, or rejected, in this pass
        if (stop_on_done && done_ != done_before) return;
    }
}

std::optional<double> VllmEngine::Impl::next_step_s() const {
    if (!stages_.empty() && !in_flight_.empty()) {
        // Its next event: a batch scheduled now, or the oldest coming back.
        if (!stalled_ && in_flight_.size() < stages_.size() && (!running_.empty() || !waiting_.empty())) return t_;
        return in_flight_.front().end_s;
    }
    const std::optional<double> wake = idle_until();
    if (!wake) return t_;
    if (*wake == kNever) return std::nullopt;
    return std::max(t_, *wake);
}

// The idle rules every driver shares (advance, the pipeline, schedule(),
// next_step_s). An engine has at most one connector (set_remote_prefill
// refuses a CPU tier), whose loads in flight are its pending loads.

// When the engine cannot schedule now: the time it can next act (the end
// of the load its queue's head waits for, the next arrival or load end),
// kNever when nothing is pending; nullopt when it can act now.
std::optional<double> VllmEngine::Impl::idle_until() const {
    if (blocked_on_load()) return wait_load_s_;
    if (nothing_to_schedule()) return next_event_s();
    return std::nullopt;
}

// Idle: moves the clock to `wake`, logging the seconds crossed; false (the
// clock kept) when that is never or at or after `horizon`.
bool VllmEngine::Impl::jump_idle(double wake, double horizon) {
    if (wake == kNever || wake >= horizon) return false;
    t_ = std::max(t_, wake);
    sample(t_);
    return true;
}

// A pass scheduled nothing and rejected nobody: the queue's head waits for
// blocks that loads hold (KV pulled from a prefill instance, or loading
// from the CPU tier), and nothing is admitted before the first load ends
// (vLLM's scheduler skips it in WAITING_FOR_REMOTE_KVS until
// finished_recving names it). With the queue empty instead, idle_until
// takes the next arrival.
void VllmEngine::Impl::wait_for_loads() {
    if (!waiting_.empty() && connector_ && connector_->receiving()) wait_load_s_ = connector_->next_recv_end_s();
}

const std::vector<KvConnector::Load>& VllmEngine::Impl::loads() const {
    static const std::vector<KvConnector::Load> none;
    return connector_ ? connector_->loads() : none;
}

// Nothing runs and the queue's head waits for blocks that loads hold:
// nothing can be scheduled before wait_load_s_.
bool VllmEngine::Impl::blocked_on_load() const {
    return running_.empty() && wait_load_s_ > t_;
}

// Nothing runs or waits, and no CPU load has ended: the engine is idle
// until next_event_s().
bool VllmEngine::Impl::nothing_to_schedule() const {
    return running_.empty() && waiting_.empty() && !(offload_ && offload_->next_recv_end_s() <= t_);
}

// The next arrival routed here, or the end of a load (from host memory or a
// prefill instance), whichever comes first; kNever when none is pending.
double VllmEngine::Impl::next_event_s() const {
    const double next = inbox_.empty() ? kNever : records_[inbox_.front()].arrival_s;
    return std::min(next, next_load_end_s());
}

std::int64_t VllmEngine::Impl::outstanding_at(double t) const {
    // Arrived: every added request but those still in the inbox after t.
    std::int64_t arrived = added_;
    for (auto it = inbox_.rbegin(); it != inbox_.rend() && records_[*it].arrival_s > t; ++it) --arrived;
    // Finished by t: all but those of a last step that ends after t.
    const std::int64_t finished = done_ - (t_ > t ? last_step_done_ : 0);
    return arrived - finished;
}

SimRun VllmEngine::Impl::take_totals() {
    run_.end_s = t_;
    run_.remembered_hits = kv_cache_.remembered_answers();
    return std::move(run_);
}

// ---- VllmEngine: the public face of its Impl ----

VllmEngine::VllmEngine(const Workload& w, const SchedulerConfig& c, const StepPricer& price, const DecodePricer& decode, bool check,
                       RequestStates& states, const StagePricers& stages)
    : impl_(std::make_unique<Impl>(w, c, price, decode, check, states, stages)) {}
VllmEngine::~VllmEngine() = default;
VllmEngine::VllmEngine(VllmEngine&&) noexcept = default;
void VllmEngine::add(std::size_t r) {
    impl_->add(r);
}
std::optional<double> VllmEngine::next_step_s() const {
    return impl_->next_step_s();
}
void VllmEngine::advance(double horizon, bool stop_on_done) {
    impl_->advance(horizon, stop_on_done);
}
std::int64_t VllmEngine::outstanding_at(double t) const {
    return impl_->outstanding_at(t);
}
std::int64_t VllmEngine::done() const {
    return impl_->done();
}
double VllmEngine::now() const {
    return impl_->now();
}
const SimRun& VllmEngine::totals() const {
    return impl_->totals();
}
SimRun VllmEngine::take_totals() {
    return impl_->take_totals();
}
bool VllmEngine::idle() const {
    return impl_->idle();
}
std::int64_t VllmEngine::waiting_count() const {
    return impl_->waiting_count();
}
std::int64_t VllmEngine::running_count() const {
    return impl_->running_count();
}
void VllmEngine::sync_to(double t) {
    impl_->sync_to(t);
}
StepPlan VllmEngine::schedule() {
    return impl_->schedule();
}
void VllmEngine::commit(const StepPlan& p, double dt) {
    impl_->commit(p, dt);
}
void VllmEngine::idle_step(double dt) {
    impl_->idle_step(dt);
}
void VllmEngine::set_remote_prefill(RemoteLoad load) {
    impl_->set_remote_prefill(std::move(load));
}

SimRun simulate(const Workload& w, const SchedulerConfig& c, const StepPricer& price, bool check_invariants) {
    return simulate(w, c, price, DecodePricer{}, check_invariants);
}

SimRun simulate(const Workload& w, const SchedulerConfig& c, const StepPricer& price, const DecodePricer& decode, bool check_invariants,
                const StagePricers& stages) {
    check_scheduler_config(c);
    check_arrivals(w);
    if (stages.size() == 1) usage_error("simulate: a pipeline needs two or more stages");
    RequestStates states = request_states(w);
    VllmEngine e(w, c, price, decode, check_invariants, states, stages);
    drive_alone(e, w, states.records);
    SimRun run = e.take_totals();
    run.requests = std::move(states.records);
    return run;
}

}  // namespace kvplan
