#include "core/sim/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "core/error.hpp"
#include "core/sim/block_pool.hpp"

namespace kvplan {

namespace {

// A request's state inside the engine.
struct Live {
    std::int64_t computed = 0;          // tokens whose KV is in the cache
    std::int64_t generated = 0;         // output tokens sampled so far
    std::vector<std::int64_t> blocks;   // block ids, in token order
    std::int64_t hashed = 0;            // leading blocks registered in the prefix cache
    double last_token_s = 0;
    std::vector<std::uint64_t> hashes;  // the chained block hashes computed so far
};

// The content hash of block j of request r: its prompt's content key while
// it has one (equal content, equal hash, across requests), then a key unique
// to the request (its own output and the rest of its prompt, which a
// recompute after preemption finds again). Chained like vLLM's block hashes:
// equal only if every block before is equal too.
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
    std::uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    return x ^ (x >> 29);
}

class Engine {
public:
    Engine(const Workload& w, const SchedulerConfig& c, const StepPricer& price, bool check)
        : w_(w), c_(c), price_(price), check_(check), pool_(c.num_gpu_blocks), live_(w.requests.size()) {
        run_.requests.resize(w.requests.size());
        run_.total_blocks = c.num_gpu_blocks;
        for (std::size_t i = 0; i < w.requests.size(); ++i) {
            run_.requests[i].arrival_s = w.requests[i].arrival_s;
            run_.requests[i].input_tokens = w.requests[i].input_tokens;
            run_.requests[i].output_tokens = w.requests[i].output_tokens;
        }
    }

    SimRun run();

private:
    std::int64_t total_tokens(std::size_t r) const { return w_.requests[r].input_tokens + live_[r].generated; }
    std::uint64_t block_hash(std::size_t r, std::int64_t j);
    std::uint64_t block_key(std::size_t r, std::int64_t j) const;
    std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + c_.block_size - 1) / c_.block_size; }
    bool allocate(std::size_t r, std::int64_t new_tokens);
    void free_blocks(std::size_t r);
    void preempt(std::size_t r);
    std::int64_t cap(std::int64_t n, std::int64_t budget) const {
        if (c_.long_prefill_token_threshold > 0) n = std::min(n, c_.long_prefill_token_threshold);
        return std::min(n, budget);
    }
    void arrive();
    bool schedule_running(std::int64_t& budget);
    void schedule_waiting(std::int64_t& budget);
    bool admit(std::size_t r, std::int64_t& budget);
    void apply_step();
    void register_full_blocks(std::size_t r);
    void sample(double until);

    const Workload& w_;
    SchedulerConfig c_;
    const StepPricer& price_;
    bool check_;
    BlockPool pool_;
    std::vector<Live> live_;
    SimRun run_;
    std::deque<std::size_t> waiting_;
    std::vector<std::size_t> running_;
    std::vector<std::pair<std::size_t, std::int64_t>> step_;  // (request, new tokens) this step
    std::vector<SeqWork> work_;
    std::size_t next_arrival_ = 0;  // open loop: the next request to arrive
    std::size_t released_ = 0;      // closed loop: requests handed to clients so far
    std::size_t done_ = 0;
    double t_ = 0;
    double next_sample_ = 1;
    double interval_prompt_ = 0, interval_generation_ = 0;
};

// Block j's own content key (see mix above).
std::uint64_t Engine::block_key(std::size_t r, std::int64_t j) const {
    const SimRequest& q = w_.requests[r];
    const std::int64_t first_token = j * c_.block_size;
    // A block is shared content only when it lies wholly inside the prompt
    // and inside one key's span; one that straddles a span's end also holds
    // the request's own tokens.
    const std::int64_t span = q.key_block_tokens > 0 ? first_token / q.key_block_tokens : 0;
    if (q.key_block_tokens > 0 && span < static_cast<std::int64_t>(q.content_keys.size()) &&
        first_token + c_.block_size <= std::min(q.input_tokens, (span + 1) * q.key_block_tokens))
        return mix(q.content_keys[static_cast<std::size_t>(span)], static_cast<std::uint64_t>(first_token % q.key_block_tokens));
    return mix(0x5bd1e995ULL + r, static_cast<std::uint64_t>(j));
}

// The chained hash of blocks 0..j, extended once per block and kept.
std::uint64_t Engine::block_hash(std::size_t r, std::int64_t j) {
    std::vector<std::uint64_t>& h = live_[r].hashes;
    while (static_cast<std::int64_t>(h.size()) <= j) {
        const std::uint64_t parent = h.empty() ? 0x84222325cbf29ce4ULL : h.back();
        h.push_back(mix(parent, block_key(r, static_cast<std::int64_t>(h.size()))));
    }
    return h[static_cast<std::size_t>(j)];
}

// allocate_slots: the blocks for `new_tokens` more tokens, or false when the
// pool has too few free blocks (nothing is taken then).
bool Engine::allocate(std::size_t r, std::int64_t new_tokens) {
    Live& l = live_[r];
    const std::int64_t need = blocks_for(l.computed + new_tokens) - static_cast<std::int64_t>(l.blocks.size());
    if (need > pool_.free_count()) return false;
    for (std::int64_t i = 0; i < need; ++i) l.blocks.push_back(pool_.allocate());
    run_.peak_blocks_used = std::max(run_.peak_blocks_used, pool_.used());
    return true;
}

// Blocks go back in reverse order, so a request's tail is evicted before
// its prefix (vLLM's free order, which keeps shared prefixes longest).
void Engine::free_blocks(std::size_t r) {
    Live& l = live_[r];
    for (auto it = l.blocks.rbegin(); it != l.blocks.rend(); ++it) pool_.release(*it);
    l.blocks.clear();
    l.hashed = 0;
}

void Engine::preempt(std::size_t r) {
    run_.preemptions += 1;
    run_.requests[r].preemptions += 1;
    run_.recomputed_tokens += live_[r].computed;
    free_blocks(r);
    live_[r].computed = 0;
    waiting_.push_front(r);
}

void Engine::arrive() {
    if (w_.concurrency > 0) {
        // Closed loop: keep `concurrency` requests in the system.
        while (released_ < w_.requests.size() && released_ - done_ < static_cast<std::size_t>(w_.concurrency)) {
            run_.requests[released_].arrival_s = t_;
            waiting_.push_back(released_++);
        }
        return;
    }
    while (next_arrival_ < w_.requests.size() && w_.requests[next_arrival_].arrival_s <= t_) waiting_.push_back(next_arrival_++);
}

// Returns false when a request was preempted this step.
bool Engine::schedule_running(std::int64_t& budget) {
    bool preempted = false;
    for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
        const std::size_t r = running_[i];
        const std::int64_t n = cap(total_tokens(r) - live_[r].computed, budget);
        if (n <= 0) continue;
        bool scheduled = true;
        while (!allocate(r, n)) {
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
        step_.push_back({r, n});
        budget -= n;
    }
    return !preempted;
}

// A waiting request: its cached prefix, then its first chunk. False when its
// blocks cannot be had (the admission stops there).
bool Engine::admit(std::size_t r, std::int64_t& budget) {
    Live& l = live_[r];
    // Its prompt and every output token but the last (whose KV is never
    // written) must fit the whole pool, or it would preempt itself forever.
    // vLLM refuses such a pool at start-up (max_model_len must fit,
    // kv_cache_utils.py _check_enough_kv_cache_memory); a pool set with
    // --num-gpu-blocks can be smaller, and then the request is rejected.
    if (blocks_for(w_.requests[r].input_tokens + w_.requests[r].output_tokens - 1) > pool_.total()) {
        run_.requests[r].rejected = true;
        waiting_.pop_front();
        ++done_;
        return true;
    }
    const bool first = run_.requests[r].scheduled_s < 0;  // not a preempted request coming back
    std::vector<std::int64_t> hits;
    std::int64_t free_hits = 0;
    if (c_.prefix_caching) {
        // At most all but the last token: its logits must be computed (get_computed_blocks).
        const std::int64_t max_blocks = (total_tokens(r) - 1) / c_.block_size;
        for (std::int64_t j = 0; j < max_blocks; ++j) {
            auto b = pool_.find(block_hash(r, j));
            if (!b) break;
            hits.push_back(*b);
            if (pool_.is_free(*b)) ++free_hits;
        }
    }
    const std::int64_t cached = static_cast<std::int64_t>(hits.size()) * c_.block_size;
    const std::int64_t n = cap(total_tokens(r) - cached, budget);
    if (n <= 0) return false;
    const std::int64_t need = blocks_for(cached + n) - static_cast<std::int64_t>(hits.size());
    if (need + free_hits > pool_.free_count()) return false;
    for (std::int64_t b : hits) pool_.touch(b);
    l.blocks = std::move(hits);
    l.hashed = static_cast<std::int64_t>(l.blocks.size());
    l.computed = cached;
    allocate(r, n);  // cannot fail: the free blocks were counted above
    if (first) {
        run_.prompt_tokens += w_.requests[r].input_tokens;
        run_.prefix_hit_tokens += cached;
        run_.requests[r].cached_tokens = cached;
        run_.requests[r].scheduled_s = t_;
    }
    waiting_.pop_front();
    running_.push_back(r);
    step_.push_back({r, n});
    budget -= n;
    return true;
}

void Engine::schedule_waiting(std::int64_t& budget) {
    while (!waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_num_seqs)
        if (!admit(waiting_.front(), budget)) break;
}

// Full blocks of a request enter the prefix cache once their KV is computed.
void Engine::register_full_blocks(std::size_t r) {
    Live& l = live_[r];
    const std::int64_t full = l.computed / c_.block_size;
    for (; l.hashed < full; ++l.hashed) pool_.set_hash(l.blocks[static_cast<std::size_t>(l.hashed)], block_hash(r, l.hashed));
}

// vLLM's log line for every whole second the step crossed.
void Engine::sample(double until) {
    while (next_sample_ <= until) {
        TimePoint p;
        p.t_s = next_sample_;
        p.running = static_cast<std::int64_t>(running_.size());
        p.waiting = static_cast<std::int64_t>(waiting_.size());
        p.kv_cache_usage = pool_.total() > 0 ? static_cast<double>(pool_.used()) / static_cast<double>(pool_.total()) : 0;
        p.prompt_tokens_per_s = interval_prompt_;
        p.generation_tokens_per_s = interval_generation_;
        run_.timeseries.push_back(p);
        interval_prompt_ = interval_generation_ = 0;
        next_sample_ += 1;
    }
}

void Engine::apply_step() {
    work_.clear();
    for (const auto& [r, n] : step_) work_.push_back(SeqWork{live_[r].computed, n});
    const double dt = price_(work_);
    if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a step priced at a non-positive time");
    t_ += dt;
    run_.steps += 1;
    std::vector<std::size_t> finished;
    for (const auto& [r, n] : step_) {
        Live& l = live_[r];
        const bool decode = n == 1 && l.generated > 0 && l.computed + 1 == total_tokens(r);
        if (!decode) interval_prompt_ += static_cast<double>(n);
        l.computed += n;
        if (c_.prefix_caching) register_full_blocks(r);
        if (l.computed < total_tokens(r)) continue;  // a prefill chunk: no token yet
        // The step that reaches the last token samples the next one.
        RequestRecord& rec = run_.requests[r];
        l.generated += 1;
        interval_generation_ += 1;
        if (rec.first_token_s < 0) rec.first_token_s = t_;
        else if (l.generated > 1) run_.itl_s.push_back(t_ - l.last_token_s);
        l.last_token_s = t_;
        if (l.generated >= w_.requests[r].output_tokens) finished.push_back(r);
    }
    for (std::size_t r : finished) {
        run_.requests[r].finish_s = t_;
        free_blocks(r);
        live_[r].hashes = {};
        running_.erase(std::find(running_.begin(), running_.end(), r));
        ++done_;
    }
    sample(t_);
}

SimRun Engine::run() {
    const std::size_t n = w_.requests.size();
    while (done_ < n) {
        arrive();
        if (running_.empty() && waiting_.empty()) {
            if (w_.concurrency > 0 || next_arrival_ >= n) break;  // nothing left to arrive
            // Idle: jump to the next arrival.
            t_ = std::max(t_, w_.requests[next_arrival_].arrival_s);
            sample(t_);
            continue;
        }
        step_.clear();
        std::int64_t budget = c_.max_num_batched_tokens;
        if (schedule_running(budget)) schedule_waiting(budget);
        if (step_.empty()) {
            // A request preempted itself or was rejected: the queue's head
            // now meets an empty pool, which admits or rejects it next pass.
            if (running_.empty()) continue;
            throw std::logic_error("the scheduler found nothing to run");
        }
        apply_step();
        if (check_ && !pool_.consistent()) throw std::logic_error("block pool inconsistent after a step");
    }
    run_.end_s = t_;
    return std::move(run_);
}

}  // namespace

SimRun simulate(const Workload& w, const SchedulerConfig& c, const StepPricer& price, bool check_invariants) {
    if (c.num_gpu_blocks <= 0) usage_error("simulate: the KV pool has no blocks");
    if (c.block_size <= 0 || c.max_num_seqs <= 0 || c.max_num_batched_tokens <= 0)
        usage_error("simulate: block size, max_num_seqs and max_num_batched_tokens must be positive");
    for (std::size_t i = 1; i < w.requests.size(); ++i)
        if (w.requests[i].arrival_s < w.requests[i - 1].arrival_s) usage_error("simulate: arrivals must be sorted");
    if (!w.requests.empty() && !(w.requests.front().arrival_s >= 0 && w.requests.back().arrival_s <= kMaxReplaySeconds))
        usage_error("simulate: arrivals must lie within 0 to 10^7 s (116 days)");
    Engine e(w, c, price, check_invariants);
    return e.run();
}

}  // namespace kvplan
