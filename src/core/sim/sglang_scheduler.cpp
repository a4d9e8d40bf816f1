#include "core/sim/sglang_scheduler.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>

#include "core/checked_conversion.hpp"
#include "core/error.hpp"
#include "core/sim/drive.hpp"
#include "core/sim/radix_cache.hpp"

namespace kvplan {

namespace {

// python/sglang/srt/managers/schedule_policy.py: CLIP_MAX_NEW_TOKENS (the
// reservation of one request's future decode tokens is capped at 4096).
constexpr std::int64_t kClipMaxNewTokens = 4096;
// global_config.py: retract_decode_steps, default_init_new_token_ratio,
// default_min_new_token_ratio_factor, default_new_token_ratio_decay_steps.
constexpr std::int64_t kRetractDecodeSteps = 20;
constexpr double kInitNewTokenRatio = 0.7;
constexpr double kMinNewTokenRatioFactor = 0.14;
constexpr double kNewTokenRatioDecaySteps = 600;
// schedule_policy.py: LPM falls back to FCFS past 128 waiting requests, and
// IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD / _DEPRIORITIZE_THRESHOLD.
constexpr std::size_t kLpmMaxQueue = 128;
constexpr std::int64_t kInBatchCheckTokens = 32;
constexpr std::int64_t kInBatchDeprioritizeTokens = 32;

using Req = SglangLive;

// One request's share of a prefill pass.
struct Extend {
    std::size_t r = 0;
    std::int64_t prefix = 0;  // tokens already held before the pass
    std::int64_t tokens = 0;  // tokens computed in the pass
};

enum class AddResult { Continue, NoToken, Other };

}  // namespace

class SglangEngine::Impl {
public:
    Impl(const Workload& w, const SglangConfig& c, const StepPricer& price, bool check, SglangStates& states);
    void add(std::size_t r) {
        inbox_.push_back(r);
        ++added_;
    }
    std::optional<double> next_step_s() const;
    void advance(double horizon, bool stop_on_done);
    std::int64_t outstanding_at(double t) const;
    std::int64_t done() const { return static_cast<std::int64_t>(done_); }
    double now() const { return t_; }
    SimRun take_totals() {
        run_.end_s = t_;
        return std::move(run_);
    }
    bool idle() const { return running_.empty() && waiting_.empty() && chunked_ < 0 && inbox_.empty(); }
    std::int64_t waiting_count() const { return static_cast<std::int64_t>(waiting_.size() + inbox_.size()); }
    std::int64_t running_count() const { return static_cast<std::int64_t>(running_.size()) + (chunked_ >= 0 ? 1 : 0); }
    void sync_to(double t);
    bool plan_step();
    const std::vector<SeqWork>& planned_work() const { return work_; }
    void commit_step(double dt);
    void idle_step(double dt);

private:
    std::int64_t fill(std::size_t r) const { return w_.requests[r].input_tokens + q_[r].generated; }
    std::int64_t free_tokens() const { return c_.max_total_tokens - tree_.total_tokens() - private_; }
    std::int64_t evictable() const { return c_.radix_cache ? tree_.evictable_tokens() : 0; }
    std::int64_t held() const { return c_.max_total_tokens - free_tokens() - evictable(); }
    std::vector<Segment> segments_of(std::size_t r) const;
    void evict_if_needed(std::int64_t tokens);
    void allocate(std::int64_t tokens);
    void cache_request(std::size_t r, bool finished);
    void release(std::size_t r);
    void arrive();
    void admit_arrival(std::size_t r);
    // get_new_batch_prefill with its PrefillAdder: fills batch_, or leaves it empty.
    void schedule_prefill();
    void sort_longest_prefix();
    AddResult add_one_req(std::size_t r);
    void add_chunked_req();
    AddResult budget_state() const;
    double rem_total() const { return static_cast<double>(free_tokens() + evictable()) - rem_total_offset_; }
    double cur_rem() const { return static_cast<double>(free_tokens() + evictable() - cur_rem_offset_); }
    void take(std::size_t r, std::int64_t prefix, std::int64_t tokens, std::int64_t reserve);
    // run_prefill and run_decode, each split at its forward pass: begin_*
    // takes the slots and fills work_, end_* samples once the pass has taken
    // its time (lockstep prices the pass between the two).
    void run_prefill();
    void begin_prefill();
    void end_prefill();
    // update_running_batch: false when no decode batch runs.
    bool prepare_decode();
    void retract_decode();
    void run_decode();
    void begin_decode();
    void end_decode();
    void end_pass(std::size_t done_before);
    void sample_token(std::size_t r, std::vector<std::size_t>& finished);
    void finish(std::size_t r);
    void elapse(double dt);
    void sample(double until);
    void check() const;

    const Workload& w_;
    SglangConfig c_;
    const StepPricer& price_;
    bool check_;
    RadixCache tree_;
    std::vector<RequestRecord>& records_;
    std::vector<Req>& q_;
    SimRun run_;
    std::deque<std::size_t> inbox_;  // added, not yet arrived
    std::deque<std::size_t> waiting_;
    std::vector<std::size_t> running_;
    std::int64_t chunked_ = -1;  // the request being prefilled in chunks
    std::int64_t private_ = 0;   // slots held by requests outside the radix cache
    bool batch_is_full_ = false;
    bool running_shrank_ = false;  // a running request left since the last decode pass
    double init_ratio_ = 0, min_ratio_ = 0, ratio_decay_ = 0, new_token_ratio_ = 0;
    // The PrefillAdder of the pass being formed.
    std::vector<Extend> batch_;
    double rem_total_offset_ = 0;
    std::int64_t cur_rem_offset_ = 0, rem_input_ = 0, rem_chunk_ = 0;
    std::int64_t new_chunked_ = -1;
    std::vector<SeqWork> work_;
    std::size_t done_ = 0;
    std::int64_t added_ = 0;
    std::size_t last_pass_done_ = 0;                                  // requests its last pass finished or rejected
    enum class Pass { None, Prefill, Decode } planned_ = Pass::None;  // lockstep: the pass formed
    std::size_t plan_done_before_ = 0;                                // lockstep: done_ when the pass was formed
    double t_ = 0, next_sample_ = 1, interval_prompt_ = 0, interval_generation_ = 0;
};

SglangEngine::Impl::Impl(const Workload& w, const SglangConfig& c, const StepPricer& price, bool check, SglangStates& states)
    : w_(w), c_(c), price_(price), check_(check), records_(states.records), q_(states.live) {
    run_.total_blocks = c.max_total_tokens;
    // scheduler.py __init__: the ratio starts at 0.7 x schedule_conservativeness
    // and decays to 0.14 of that over 600 decode passes.
    init_ratio_ = std::min(kInitNewTokenRatio * c.schedule_conservativeness, 1.0);
    min_ratio_ = std::min(init_ratio_ * kMinNewTokenRatioFactor, 1.0);
    ratio_decay_ = (init_ratio_ - min_ratio_) / kNewTokenRatioDecaySteps;
    new_token_ratio_ = init_ratio_;
}

// A prompt's leading content blocks (equal keys and lengths, equal tokens),
// then the request's own tokens: the rest of its prompt and its output.
std::vector<Segment> SglangEngine::Impl::segments_of(std::size_t r) const {
    const SimRequest& s = w_.requests[r];
    std::vector<Segment> segs;
    std::int64_t shared = 0;
    if (s.key_block_tokens > 0)
        for (std::uint64_t key : s.content_keys) {
            const std::int64_t n = std::min(s.key_block_tokens, s.input_tokens - shared);
            if (n <= 0) break;
            segs.push_back(Segment{mix_keys(key, static_cast<std::uint64_t>(n)), n});
            shared += n;
        }
    segs.push_back(Segment{mix_keys(0x5bd1e995ULL + r, 0x2545f4914f6cdd1dULL), s.input_tokens + q_[r].max_new - shared});
    return segs;
}

// evict_from_tree_cache: when fewer than `tokens` slots are free, the cache
// evicts `tokens` of its unlocked tokens (not just the shortfall).
void SglangEngine::Impl::evict_if_needed(std::int64_t tokens) {
    if (c_.radix_cache && free_tokens() < tokens) tree_.evict(tokens);
}

// alloc_token_slots: admission counted these slots as free or evictable.
void SglangEngine::Impl::allocate(std::int64_t tokens) {
    evict_if_needed(tokens);
    if (free_tokens() < tokens) throw std::logic_error("sglang: a pass was admitted without the slots it needs");
    private_ += tokens;
    run_.peak_blocks_used = std::max(run_.peak_blocks_used, held());
}

// cache_unfinished_req / cache_finished_req: the request's computed tokens
// enter the radix cache (the slots of tokens already there are freed), and
// its lock moves to the new end of its path; a finished request unlocks.
void SglangEngine::Impl::cache_request(std::size_t r, bool finished) {
    Req& q = q_[r];
    if (!c_.radix_cache) {
        if (finished) private_ -= q.computed;
        return;
    }
    private_ -= q.computed - q.path;
    const RadixCache::NodeId node = tree_.insert(q.segments, q.computed);
    if (!finished) tree_.lock(node);
    tree_.unlock(q.node);
    q.node = finished ? RadixCache::kRoot : node;
    q.path = finished ? 0 : q.computed;
}

// retract_decode: the request's own slots are freed, its cached prompt stays
// in the tree (unlocked), and it is prefilled again from its prompt and the
// tokens it generated.
void SglangEngine::Impl::release(std::size_t r) {
    Req& q = q_[r];
    private_ -= q.computed - q.path;
    if (c_.radix_cache) tree_.unlock(q.node);
    q.node = RadixCache::kRoot;
    q.path = 0;
    q.computed = 0;
}

// handle_generate_request: a prompt longer than max_req_input_len is refused,
// and max_new_tokens is cut to what the pool and the context hold
// (max_req_len = min(context_len - 1, pool - 1), max_req_input_len = max_req_len - 5).
void SglangEngine::Impl::admit_arrival(std::size_t r) {
    const std::int64_t context = c_.context_len > 0 ? c_.context_len : c_.max_total_tokens;
    const std::int64_t max_req_len = std::min(context - 1, c_.max_total_tokens - 1);
    const SimRequest& s = w_.requests[r];
    if (s.input_tokens > max_req_len - 5) {
        records_[r].rejected = true;
        ++done_;
        return;
    }
    q_[r].max_new = std::max<std::int64_t>(1, std::min(s.output_tokens, max_req_len - s.input_tokens - 1));
    records_[r].output_tokens = q_[r].max_new;
    q_[r].segments = segments_of(r);
    waiting_.push_back(r);
}

// The requests added whose arrival time has come (a closed loop's driver
// sets that time when it sends one).
void SglangEngine::Impl::arrive() {
    while (!inbox_.empty() && records_[inbox_.front()].arrival_s <= t_) {
        admit_arrival(inbox_.front());
        inbox_.pop_front();
    }
}

AddResult SglangEngine::Impl::budget_state() const {
    if (rem_total() <= 0 || cur_rem() <= 0) return AddResult::NoToken;
    if (rem_input_ <= 0 || (c_.chunked_prefill_size > 0 && rem_chunk_ <= 0)) return AddResult::Other;
    return AddResult::Continue;
}

// _update_prefill_budget: the pass's tokens and the request's future decode
// tokens (`reserve`) come off the budgets.
void SglangEngine::Impl::take(std::size_t r, std::int64_t prefix, std::int64_t tokens, std::int64_t reserve) {
    batch_.push_back(Extend{r, prefix, tokens});
    rem_total_offset_ += static_cast<double>(tokens + reserve);
    cur_rem_offset_ += tokens;
    rem_input_ -= tokens;
    rem_chunk_ -= tokens;
}

// PrefillAdder.add_chunked_req: the next chunk of the request being chunked.
void SglangEngine::Impl::add_chunked_req() {
    const std::size_t r = static_cast<std::size_t>(chunked_);
    const std::int64_t rest = fill(r) - q_[r].computed;
    const std::int64_t room = std::min<std::int64_t>(rem_chunk_, static_cast<std::int64_t>(rem_total()));
    if (room <= 0) return;  // no room this pass: it waits, still chunked
    const bool truncated = rest > room;
    take(r, q_[r].computed, std::min(rest, room), truncated ? 0 : std::min(q_[r].max_new, kClipMaxNewTokens));
    if (!truncated) chunked_ = -1;
}

// PrefillAdder.add_one_req for a request whose prefix was just matched.
AddResult SglangEngine::Impl::add_one_req(std::size_t r) {
    Req& q = q_[r];
    const std::int64_t extend = fill(r) - q.computed;
    const std::int64_t total = extend + std::min(std::max<std::int64_t>(q.max_new - q.generated, 0), kClipMaxNewTokens);
    if (static_cast<double>(total) >= rem_total()) return AddResult::NoToken;
    if (extend >= rem_input_ && !batch_.empty()) return AddResult::Other;
    // The matched prefix is locked while the request is weighed (_lock_node):
    // it stops counting as evictable.
    if (c_.radix_cache) tree_.lock(q.node);
    if (static_cast<double>(total) >= rem_total()) {
        if (c_.radix_cache) tree_.unlock(q.node);
        return AddResult::NoToken;
    }
    if (c_.chunked_prefill_size <= 0 || extend <= rem_chunk_) {
        take(r, q.computed, extend, std::min(q.max_new, kClipMaxNewTokens));
    } else {
        if (rem_chunk_ <= 0) {
            if (c_.radix_cache) tree_.unlock(q.node);
            return AddResult::Other;
        }
        if (new_chunked_ >= 0 || chunked_ >= 0) throw std::logic_error("sglang: two chunked requests");
        take(r, q.computed, rem_chunk_, 0);
        new_chunked_ = static_cast<std::int64_t>(r);
    }
    return budget_state();
}

// SchedulePolicy.calc_priority with lpm: _compute_prefix_matches, then
// _sort_by_longest_prefix (a stable sort, as Python's).
void SglangEngine::Impl::sort_longest_prefix() {
    RadixCache queued;  // waiting_queue_radix_tree, rebuilt every pass
    std::vector<std::pair<std::int64_t, std::size_t>> keyed;
    for (std::size_t r : waiting_) {
        const std::int64_t cached = tree_.match(q_[r].segments, fill(r) - 1).tokens;
        std::int64_t key = -cached;
        if (cached <= kInBatchCheckTokens) {
            if (queued.match(q_[r].segments, fill(r)).tokens >= kInBatchDeprioritizeTokens) key = INT64_MAX;
            else queued.insert(q_[r].segments, fill(r));
        }
        keyed.push_back({key, r});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < keyed.size(); ++i) waiting_[i] = keyed[i].second;
}

void SglangEngine::Impl::schedule_prefill() {
    batch_.clear();
    if ((batch_is_full_ || waiting_.empty()) && chunked_ < 0) return;
    const std::int64_t running = static_cast<std::int64_t>(running_.size());
    if (running >= c_.max_running_requests && chunked_ < 0) {
        batch_is_full_ = true;
        return;
    }
    if (c_.policy == SglangPolicy::Lpm && c_.radix_cache && waiting_.size() <= kLpmMaxQueue) sort_longest_prefix();
    // Running requests reserve what they may still decode, scaled by the ratio.
    rem_total_offset_ = 0;
    for (std::size_t r : running_)
        rem_total_offset_ += static_cast<double>(std::min(q_[r].max_new - q_[r].generated, kClipMaxNewTokens)) * new_token_ratio_;
    cur_rem_offset_ = 0;
    rem_input_ = c_.max_prefill_tokens;
    rem_chunk_ = c_.chunked_prefill_size;
    new_chunked_ = -1;
    if (chunked_ >= 0) add_chunked_req();
    std::size_t taken = 0;
    for (std::size_t r : waiting_) {
        if (running + static_cast<std::int64_t>(batch_.size()) >= c_.max_running_requests) {
            batch_is_full_ = true;
            break;
        }
        // init_next_round_input: the prompt (and any tokens generated before
        // a retraction) matched in the cache, all but the last token.
        Req& q = q_[r];
        if (c_.radix_cache) {
            const RadixCache::Match m = tree_.match(q.segments, fill(r) - 1);
            q.node = m.node;
            q.path = q.computed = m.tokens;
        }
        const std::size_t before = batch_.size();
        const AddResult res = add_one_req(r);
        if (batch_.size() > before) ++taken;
        if (batch_.size() == before) {  // not admitted: it holds nothing
            q.node = RadixCache::kRoot;
            q.path = q.computed = 0;
        }
        if (res != AddResult::Continue) {
            if (res == AddResult::NoToken) batch_is_full_ = true;
            break;
        }
    }
    // The admitted requests leave the queue (its head, in order).
    for (std::size_t i = 0; i < taken; ++i) waiting_.pop_front();
    if (new_chunked_ >= 0) chunked_ = new_chunked_;
}

void SglangEngine::Impl::run_prefill() {
    begin_prefill();
    elapse(price_(work_));
    end_prefill();
}

void SglangEngine::Impl::begin_prefill() {
    std::int64_t tokens = 0;
    work_.clear();
    for (const Extend& e : batch_) {
        tokens += e.tokens;
        work_.push_back(SeqWork{e.prefix, e.tokens});
        RequestRecord& rec = records_[e.r];
        Req& q = q_[e.r];
        if (rec.scheduled_s < 0) {
            rec.scheduled_s = t_;
            rec.cached_tokens = e.prefix;
            run_.prompt_tokens += w_.requests[e.r].input_tokens;
            run_.prefix_hit_tokens += e.prefix;
        } else if (q.retracted) {
            run_.recomputed_tokens += e.tokens;
            if (e.prefix + e.tokens == fill(e.r)) q.retracted = false;
        }
    }
    allocate(tokens);
}

void SglangEngine::Impl::end_prefill() {
    for (const Extend& e : batch_) interval_prompt_ += static_cast<double>(e.tokens);
    std::vector<std::size_t> finished, joined;
    for (const Extend& e : batch_) {
        Req& q = q_[e.r];
        q.computed += e.tokens;
        if (q.computed < fill(e.r)) {  // a chunk: no token yet
            cache_request(e.r, false);
            continue;
        }
        sample_token(e.r, finished);
        if (q.generated < q.max_new) {
            cache_request(e.r, false);
            joined.push_back(e.r);
        }
    }
    for (std::size_t r : finished) finish(r);
    running_.insert(running_.end(), joined.begin(), joined.end());
}

// retract_decode: requests leave, fewest output tokens first (the longest
// prompt among equals; Python's stable sort keeps the batch order of full
// ties, and pop() takes the last), until 20 slots per remaining request are
// free or one request is left.
void SglangEngine::Impl::retract_decode() {
    std::vector<std::size_t> order = running_;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (q_[a].generated != q_[b].generated) return q_[a].generated > q_[b].generated;
        return w_.requests[a].input_tokens < w_.requests[b].input_tokens;
    });
    std::vector<std::size_t> retracted;
    bool first = true;
    while (first || free_tokens() < kRetractDecodeSteps * static_cast<std::int64_t>(order.size())) {
        if (order.size() == 1) break;
        first = false;
        const std::size_t r = order.back();
        order.pop_back();
        release(r);
        q_[r].retracted = true;
        records_[r].preemptions += 1;
        run_.preemptions += 1;
        retracted.push_back(r);
        evict_if_needed(kRetractDecodeSteps * static_cast<std::int64_t>(order.size()));
    }
    std::vector<std::size_t> keep;
    for (std::size_t r : running_)
        if (std::find(order.begin(), order.end(), r) != order.end()) keep.push_back(r);
    running_ = std::move(keep);
    // The new ratio: what the remaining requests decoded, plus 20 steps each,
    // over what they may decode in all.
    double decoded = 0, max_new = 0;
    for (std::size_t r : running_) {
        decoded += static_cast<double>(q_[r].generated);
        max_new += static_cast<double>(q_[r].max_new);
    }
    new_token_ratio_ = std::min(1.0, (decoded + static_cast<double>(kRetractDecodeSteps * static_cast<std::int64_t>(running_.size()))) / max_new);
    waiting_.insert(waiting_.end(), retracted.begin(), retracted.end());  // _extend_requests_to_queue
}

bool SglangEngine::Impl::prepare_decode() {
    if (running_.empty()) {
        batch_is_full_ = false;
        return false;
    }
    const std::int64_t need = static_cast<std::int64_t>(running_.size());
    evict_if_needed(need);  // check_decode_mem
    if (free_tokens() < need) {
        retract_decode();
        running_shrank_ = true;
        if (free_tokens() < static_cast<std::int64_t>(running_.size())) throw std::logic_error("sglang: no slot left for the last running request");
    } else {
        new_token_ratio_ = std::max(new_token_ratio_ - ratio_decay_, min_ratio_);
    }
    if (running_shrank_) batch_is_full_ = false;
    running_shrank_ = false;
    return true;
}

void SglangEngine::Impl::run_decode() {
    begin_decode();
    elapse(price_(work_));
    end_decode();
}

void SglangEngine::Impl::begin_decode() {
    work_.clear();
    for (std::size_t r : running_) work_.push_back(SeqWork{q_[r].computed, 1});
    allocate(static_cast<std::int64_t>(running_.size()));
}

void SglangEngine::Impl::end_decode() {
    std::vector<std::size_t> finished;
    for (std::size_t r : running_) {
        q_[r].computed += 1;
        sample_token(r, finished);
    }
    for (std::size_t r : finished) {
        running_.erase(std::find(running_.begin(), running_.end(), r));
        finish(r);
        running_shrank_ = true;
    }
}

void SglangEngine::Impl::sample_token(std::size_t r, std::vector<std::size_t>& finished) {
    Req& q = q_[r];
    RequestRecord& rec = records_[r];
    q.generated += 1;
    interval_generation_ += 1;
    if (rec.first_token_s < 0) rec.first_token_s = t_;
    else run_.itl_s.push_back(t_ - q.last_token_s);
    q.last_token_s = t_;
    if (q.generated >= q.max_new) finished.push_back(r);
}

void SglangEngine::Impl::finish(std::size_t r) {
    cache_request(r, true);
    q_[r].segments = {};
    records_[r].finish_s = t_;
    ++done_;
}

void SglangEngine::Impl::elapse(double dt) {
    if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a pass priced at a non-positive time");
    t_ += dt;
    check_sim_clock(t_, dt);
    run_.steps += 1;
}

// The periodic log line for every whole second a pass crossed (SGLang's
// token usage counts evictable cache as free).
void SglangEngine::Impl::sample(double until) {
    while (next_sample_ <= until) {
        TimePoint p;
        p.t_s = next_sample_;
        p.running = static_cast<std::int64_t>(running_.size()) + (chunked_ >= 0 ? 1 : 0);
        p.waiting = static_cast<std::int64_t>(waiting_.size());
        p.kv_cache_usage = static_cast<double>(held()) / static_cast<double>(c_.max_total_tokens);
        p.prompt_tokens_per_s = interval_prompt_;
        p.generation_tokens_per_s = interval_generation_;
        interval_prompt_ = interval_generation_ = 0;
        next_sample_ = append_samples(run_.timeseries, p, until);
    }
}

// The pool: free + cached + held by requests = its size; every running
// request holds a lock on the cache; the tree's own bookkeeping
// (docs/invariants.md, INV-9 to INV-11).
void SglangEngine::Impl::check() const {
    if (free_tokens() < 0 || private_ < 0) throw std::logic_error("INV-9 SGLang token pool: overcommitted");
    std::int64_t priv = 0;
    for (std::size_t r : running_) priv += q_[r].computed - q_[r].path;
    if (chunked_ >= 0) priv += q_[static_cast<std::size_t>(chunked_)].computed - q_[static_cast<std::size_t>(chunked_)].path;
    if (priv != private_) throw std::logic_error("INV-10 SGLang request slots: they do not add up");
    if (c_.radix_cache && !tree_.consistent()) throw std::logic_error("INV-11 radix cache consistent: it is not");
    if (!c_.radix_cache && tree_.total_tokens() != 0) throw std::logic_error("INV-11 radix cache consistent: tokens cached with the cache off");
}

// Scheduler.event_loop_normal, pass by pass: the passes that start before
// `horizon`, taking arrivals as they come. With `stop_on_done`, returns
// after the first pass (or arrival) in which a request finished or was
// rejected: a closed loop's clients send their next request then.
void SglangEngine::Impl::advance(double horizon, bool stop_on_done) {
    int passes_without_work = 0;
    for (;;) {
        const std::size_t done_before = done_;
        arrive();
        if (stop_on_done && done_ != done_before) {
            last_pass_done_ = done_ - done_before;
            return;
        }
        if (t_ >= horizon) return;
        schedule_prefill();
        if (!batch_.empty()) {
            run_prefill();  // prefill first whenever a batch can be formed
        } else if (prepare_decode()) {
            run_decode();
        } else {
            // The batch was marked full and is empty now: the queue meets an
            // empty pool next pass, which always admits its head (the clamp
            // of admit_arrival), so a second empty pass is a bug.
            if (!waiting_.empty() || chunked_ >= 0) {
                if (++passes_without_work > 2) throw std::logic_error("sglang: the scheduler found nothing to run");
                continue;
            }
            if (inbox_.empty()) return;
            const double next = records_[inbox_.front()].arrival_s;
            if (next >= horizon) return;
            t_ = std::max(t_, next);  // idle: jump to the next arrival
        }
        passes_without_work = 0;
        end_pass(done_before);
        if (stop_on_done && done_ != done_before) return;
    }
}

void SglangEngine::Impl::end_pass(std::size_t done_before) {
    last_pass_done_ = done_ - done_before;
    sample(t_);
    if (check_) check();
}

void SglangEngine::Impl::sync_to(double t) {
    if (!(t >= t_)) throw std::logic_error("lockstep: a rank's clock moved back");
    t_ = t;
    sample(t_);
}

// One pass of advance(), formed but not yet run: the same choice (prefill
// whenever a batch can be formed, else decode), without the jump to the
// next arrival, which the group makes.
bool SglangEngine::Impl::plan_step() {
    plan_done_before_ = done_;
    planned_ = Pass::None;
    arrive();
    for (int tries = 0;; ++tries) {
        schedule_prefill();
        if (!batch_.empty()) {
            begin_prefill();
            planned_ = Pass::Prefill;
            return true;
        }
        if (prepare_decode()) {
            begin_decode();
            planned_ = Pass::Decode;
            return true;
        }
        if (waiting_.empty() && chunked_ < 0) return false;
        // As in advance(): the batch was marked full and is empty now.
        if (tries >= 2) throw std::logic_error("sglang: the scheduler found nothing to run");
    }
}

void SglangEngine::Impl::commit_step(double dt) {
    if (planned_ == Pass::None) throw std::logic_error("lockstep: a pass committed that was not planned");
    elapse(dt);
    if (planned_ == Pass::Prefill) end_prefill();
    else end_decode();
    planned_ = Pass::None;
    end_pass(plan_done_before_);
}

void SglangEngine::Impl::idle_step(double dt) {
    if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a wave priced at a non-positive time");
    t_ += dt;
    end_pass(plan_done_before_);  // requests rejected while the pass was formed
}

std::optional<double> SglangEngine::Impl::next_step_s() const {
    if (!running_.empty() || !waiting_.empty() || chunked_ >= 0) return t_;
    if (!inbox_.empty()) return std::max(t_, records_[inbox_.front()].arrival_s);
    return std::nullopt;
}

// As VllmEngine::outstanding_at: arrived by t, less finished by t (t at or
// after the start of its last pass).
std::int64_t SglangEngine::Impl::outstanding_at(double t) const {
    std::int64_t arrived = added_;
    for (auto it = inbox_.rbegin(); it != inbox_.rend() && records_[*it].arrival_s > t; ++it) --arrived;
    const std::size_t finished = done_ - (t_ > t ? last_pass_done_ : 0);
    return arrived - static_cast<std::int64_t>(finished);
}

std::int64_t sglang_default_max_running_requests(std::int64_t max_total_tokens, std::int64_t context_len) {
    const std::int64_t context = std::max<std::int64_t>(1, context_len);
    const std::int64_t estimated = checked_trunc(static_cast<double>(max_total_tokens) / static_cast<double>(context) * 512, "max_running_requests");
    return std::max<std::int64_t>(1, std::min(std::clamp<std::int64_t>(estimated, 2048, 4096), max_total_tokens / 2));
}

SimRun simulate_sglang(const Workload& w, const SglangConfig& c, const StepPricer& price, bool check_invariants) {
    check_sglang_config(c);
    check_arrivals(w);
    SglangStates states = sglang_states(w);
    SglangEngine e(w, c, price, check_invariants, states);
    drive_alone(e, w, states.records);
    if (e.done() < static_cast<std::int64_t>(w.requests.size())) throw std::logic_error("sglang: requests left unserved");
    SimRun run = e.take_totals();
    run.requests = std::move(states.records);
    return run;
}

void check_sglang_config(const SglangConfig& c) {
    if (c.max_total_tokens <= 0) usage_error("simulate: the SGLang token pool is empty");
    if (c.max_prefill_tokens <= 0 || c.chunked_prefill_size < 0 || c.schedule_conservativeness < 0)
        usage_error("simulate: max_prefill_tokens must be positive, chunked_prefill_size and schedule_conservativeness not negative");
}

SglangStates sglang_states(const Workload& w) {
    SglangStates states;
    states.records.resize(w.requests.size());
    states.live.resize(w.requests.size());
    for (std::size_t i = 0; i < w.requests.size(); ++i) {
        states.records[i].arrival_s = w.requests[i].arrival_s;
        states.records[i].input_tokens = w.requests[i].input_tokens;
        states.records[i].output_tokens = w.requests[i].output_tokens;
    }
    return states;
}

// The engine with SGLang's max_running_requests default when none is given.
SglangEngine::SglangEngine(const Workload& w, const SglangConfig& c, const StepPricer& price, bool check, SglangStates& states) {
    SglangConfig cfg = c;
    if (cfg.max_running_requests <= 0)
        cfg.max_running_requests = sglang_default_max_running_requests(c.max_total_tokens, c.context_len > 0 ? c.context_len : c.max_total_tokens);
    impl_ = std::make_unique<Impl>(w, cfg, price, check, states);
}

SglangEngine::~SglangEngine() = default;
SglangEngine::SglangEngine(SglangEngine&&) noexcept = default;
void SglangEngine::add(std::size_t r) {
    impl_->add(r);
}
std::optional<double> SglangEngine::next_step_s() const {
    return impl_->next_step_s();
}
void SglangEngine::advance(double horizon, bool stop_on_done) {
    impl_->advance(horizon, stop_on_done);
}
std::int64_t SglangEngine::outstanding_at(double t) const {
    return impl_->outstanding_at(t);
}
std::int64_t SglangEngine::done() const {
    return impl_->done();
}
double SglangEngine::now() const {
    return impl_->now();
}
SimRun SglangEngine::take_totals() {
    return impl_->take_totals();
}
bool SglangEngine::idle() const {
    return impl_->idle();
}
std::int64_t SglangEngine::waiting_count() const {
    return impl_->waiting_count();
}
std::int64_t SglangEngine::running_count() const {
    return impl_->running_count();
}
void SglangEngine::sync_to(double t) {
    impl_->sync_to(t);
}
// The lockstep pair in StepPlan's terms (dp_group.hpp): the pass formed
// keeps its own batch inside; the plan carries what the group prices.
StepPlan SglangEngine::schedule() {
    StepPlan p;
    if (!impl_->plan_step()) return p;
    p.work = impl_->planned_work();
    if (p.work.empty()) throw std::logic_error("sglang: a pass planned with no work");
    return p;
}
void SglangEngine::commit(const StepPlan& /*p*/, double dt) {
    impl_->commit_step(dt);
}
void SglangEngine::idle_step(double dt) {
    impl_->idle_step(dt);
}

}  // namespace kvplan
