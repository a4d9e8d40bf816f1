#include "core/sim/vllm_engine_impl.hpp"
#include "core/sim/drive.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/vllm_kv_cache.hpp"
#include "core/sim/block_pool.hpp"

namespace kvplan {

namespace {

// SplitMix64's finalizer (Steele, Lea and Flood, OOPSLA 2014), a bijection
// that scatters structured inputs (small ids, offsets).
std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Both inputs scrambled: a boost-style shift-and-add combine collided on the
// small ids traces use (false prefix hits, 3 in 10^6 tokens on the Azure
// trace, which shares nothing).
std::uint64_t mix(std::uint64_t a, std::uint64_t b) { return splitmix(a ^ splitmix(b)); }

}  // namespace

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
            case LayerKind::Sliding: k.kind = KvGroupKind::Sliding; k.window_tokens = g.spec.window_tokens; break;
            case LayerKind::Chunked: k.kind = KvGroupKind::Chunked; k.window_tokens = g.spec.window_tokens; break;
            case LayerKind::State: k.kind = KvGroupKind::Mamba; k.block_tokens = std::max<std::int64_t>(1, max_model_len); break;
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
    : w_(w), c_(c), price_(price), decode_(decode), stages_(stages), check_(check), pool_(std::make_unique<BlockPool>(c.num_gpu_blocks)),
      records_(states.records), live_(states.live) {
    run_.total_blocks = c.num_gpu_blocks;
    groups_ = c.groups.empty() ? std::vector<KvGroup>{KvGroup{KvGroupKind::Full, 0, c.block_size}} : c.groups;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        std::size_t first = 0;
        while (groups_[first].block_tokens != groups_[g].block_tokens) ++first;
        chain_of_.push_back(first);
    }
    // The prefix-cache lookup (kv_cache_coordinator.py): groups of one spec
    // are looked up together; full attention goes first; the hit length is
    // a multiple of every block size (HybridKVCacheCoordinator.lcm_block_size).
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        if (groups_[g].kind == KvGroupKind::Mamba) continue;
        auto it = std::find_if(hit_types_.begin(), hit_types_.end(), [&](const HitType& t) { return t.spec == groups_[g]; });
        if (it == hit_types_.end()) hit_types_.push_back(HitType{groups_[g], {g}});
        else it->groups.push_back(g);
    }
    std::stable_partition(hit_types_.begin(), hit_types_.end(), [](const HitType& t) { return t.spec.kind == KvGroupKind::Full; });
    for (const HitType& t : hit_types_) hit_align_ = std::lcm(hit_align_, t.spec.block_tokens);
    if (stages.size() == 1) throw std::logic_error("a pipeline of one stage: pass no stage pricers");
    if (c.cpu_tier.blocks > 0) {
        if (!stages.empty()) usage_error("--cpu-offload: KV offload with pipeline parallelism is not simulated; pass --pp 1");
        cpu_ = std::make_unique<CpuTier>(c.cpu_tier);
        run_.cpu_blocks = c.cpu_tier.blocks;
    }
    if (c.spec.k > 0 && !stages.empty()) usage_error("--spec-method: speculative decoding with pipeline parallelism is not simulated; pass --pp 1");
    stage_free_s_.assign(stages.size(), 0.0);
}

GroupBlocks& VllmEngine::Impl::kv(std::size_t r, std::size_t g) {
    std::vector<GroupBlocks>& k = live_[r].kv;
    if (k.size() < groups_.size()) k.resize(groups_.size());
    return k[g];
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

// Whether block j is shared content: it lies wholly inside the prompt and
// inside one key's span (one that straddles a span's end also holds the
// request's own tokens).
bool VllmEngine::Impl::keyed(std::size_t r, std::int64_t j, std::int64_t bs) const {
    const SimRequest& q = w_.requests[r];
    const std::int64_t first_token = j * bs;
    const std::int64_t span = q.key_block_tokens > 0 ? first_token / q.key_block_tokens : 0;
    return q.key_block_tokens > 0 && span < static_cast<std::int64_t>(q.content_keys.size()) &&
           first_token + bs <= std::min(q.input_tokens, (span + 1) * q.key_block_tokens);
}

// A shared block's content: its span's key and its offset in the span
// (equal content, equal key, across requests). Precondition: keyed(r, j).
std::uint64_t VllmEngine::Impl::block_key(std::size_t r, std::int64_t j, std::int64_t bs) const {
    const SimRequest& q = w_.requests[r];
    const std::int64_t first_token = j * bs;
    return mix(q.content_keys[static_cast<std::size_t>(first_token / q.key_block_tokens)], static_cast<std::uint64_t>(first_token % q.key_block_tokens));
}

// How many leading blocks of group g other requests may share: the chain of
// hashes from the first block the request's own tokens enter is its alone.
// Counted once per block size (by the first group of that size).
std::int64_t VllmEngine::Impl::shared_blocks(std::size_t r, std::size_t g) {
    GroupBlocks& k = kv(r, chain_of_[g]);
    if (k.shared_blocks < 0) {
        k.shared_blocks = 0;
        while (keyed(r, k.shared_blocks, groups_[g].block_tokens)) ++k.shared_blocks;
    }
    return k.shared_blocks;
}

// A full block enters the prefix cache. Blocks no other request can match
// skip the hash index (most blocks, and the index was most of a run's
// time): the request keeps their ids, which is all its own recompute after
// a preemption needs. As with the index, the first block to hold a content
// keeps it while it lasts.
void VllmEngine::Impl::cache_block(std::size_t r, std::size_t g, std::int64_t j) {
    GroupBlocks& l = kv(r, g);
    const std::int64_t block = l.blocks[static_cast<std::size_t>(j)];
    if (block < 0) return;  // a null block caches nothing (block_pool.py cache_full_blocks skips them)
    if (j < shared_blocks(r, g)) {
        pool_->set_hash(block, block_hash(r, g, j));
        return;
    }
    if (own_lazy(r, g)) return;
    const std::uint64_t h = private_tag(r, g, j);
    if (static_cast<std::int64_t>(l.own.size()) <= j) l.own.resize(static_cast<std::size_t>(j) + 1, -1);
    std::int64_t& kept = l.own[static_cast<std::size_t>(j)];
    if (kept >= 0 && kept != block && pool_->holds(kept, h)) return;
    kept = block;
    pool_->set_private(block, h);
}

// What a block past the shared ones holds: request r's own tokens at
// position j, equal only to itself, so (r, j) names it; no chain of hashes
// is needed (its chain would pass through the request's own blocks anyway).
// Each group caches its own copy (vLLM keys the cache by block hash and
// group id, block_pool.py BlockHashWithGroupId), so groups after the first
// mix their index in.
std::uint64_t VllmEngine::Impl::private_tag(std::size_t r, std::size_t g, std::int64_t j) const {
    const std::uint64_t tag = splitmix(splitmix(0x7a3c9e11ULL + r) ^ static_cast<std::uint64_t>(j));
    return g == 0 ? tag : mix(tag, g);
}

// The cached block holding block j's content in group g, if any.
std::optional<std::int64_t> VllmEngine::Impl::cached_block(std::size_t r, std::size_t g, std::int64_t j) {
    if (j < shared_blocks(r, g)) return pool_->find(block_hash(r, g, j));
    const std::vector<std::int64_t>& own = kv(r, g).own;
    const std::int64_t kept = j < static_cast<std::int64_t>(own.size()) ? own[static_cast<std::size_t>(j)] : -1;
    if (kept >= 0 && pool_->holds(kept, private_tag(r, g, j))) return kept;
    return std::nullopt;
}

// The chained hash of shared blocks 0..j (vLLM's block hashes: equal only
// if every block before is equal too), extended once per block and kept
// (per block size), with the group's index mixed in past the first group.
// Precondition: j < shared_blocks(r, g).
std::uint64_t VllmEngine::Impl::block_hash(std::size_t r, std::size_t g, std::int64_t j) {
    const std::int64_t bs = groups_[g].block_tokens;
    std::vector<std::uint64_t>& h = kv(r, chain_of_[g]).hashes;
    while (static_cast<std::int64_t>(h.size()) <= j) {
        const std::uint64_t parent = h.empty() ? 0x84222325cbf29ce4ULL : h.back();
        h.push_back(mix(parent, block_key(r, static_cast<std::int64_t>(h.size()), bs)));
    }
    const std::uint64_t hash = h[static_cast<std::size_t>(j)];
    return g == 0 ? hash : mix(hash, g);
}

// Tokens at the front of a context of `computed` tokens that group g's next
// token no longer attends to (get_num_skipped_tokens): a window's
// max(0, computed - window + 1); a chunk's whole finished chunks; Mamba
// all but the last (its one block of max_model_len tokens is never skipped).
std::int64_t VllmEngine::Impl::skipped_tokens(std::size_t g, std::int64_t computed) const {
    const KvGroup& k = groups_[g];
    switch (k.kind) {
        case KvGroupKind::Sliding: return std::max<std::int64_t>(0, computed - k.window_tokens + 1);
        case KvGroupKind::Chunked: return computed / k.window_tokens * k.window_tokens;
        case KvGroupKind::Mamba: return std::max<std::int64_t>(0, computed - 1);
        case KvGroupKind::Full: break;
    }
    return 0;
}

// remove_skipped_blocks: group g's blocks wholly before the skipped tokens
// go back to the pool (still cached until evicted) and null blocks take
// their place, the latest freed first, as vLLM walks them backwards.
void VllmEngine::Impl::remove_skipped(std::size_t r, std::size_t g, std::int64_t computed) {
    GroupBlocks& k = kv(r, g);
    const std::int64_t n = std::min<std::int64_t>(skipped_tokens(g, computed) / groups_[g].block_tokens,
                                                  static_cast<std::int64_t>(k.blocks.size()));
    for (std::int64_t i = n - 1; i >= k.skipped; --i) {
        std::int64_t& b = k.blocks[static_cast<std::size_t>(i)];
        if (b >= 0) pool_->release(b);
        b = -1;
    }
    k.skipped = std::max(k.skipped, n);
}

// The most blocks a request of `tokens` tokens (prompt and every output
// token whose KV is written) can hold at once, whatever its chunks: full
// attention ceil(tokens / block); a window of w, with chunks of at most
// `cap` tokens, ceil(min(w - 1 + cap, tokens) / block) + 1 (the window
// straddles a block); a chunk of C, ceil(min(C - 1 + cap, tokens) / block),
// plus one when C is not a whole number of blocks; Mamba one. vLLM sizes
// its pool check with the same bounds (kv_cache_interface.py
// max_memory_usage_bytes); one full group gives ceil(tokens / block_size).
std::int64_t VllmEngine::Impl::worst_blocks(std::int64_t tokens) const {
    const std::int64_t cap = c_.long_prefill_token_threshold > 0 ? std::min(c_.long_prefill_token_threshold, c_.max_num_batched_tokens)
                                                                  : c_.max_num_batched_tokens;
    std::int64_t worst = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        const KvGroup& k = groups_[g];
        std::int64_t b = blocks_for(g, tokens);
        if (k.kind == KvGroupKind::Sliding)
            b = std::min(b, blocks_for(g, std::min(checked_add(k.window_tokens - 1, cap), tokens)) + 1);
        else if (k.kind == KvGroupKind::Chunked)
            b = std::min(b, blocks_for(g, std::min(checked_add(k.window_tokens - 1, cap), tokens)) + (k.window_tokens % k.block_tokens != 0));
        else if (k.kind == KvGroupKind::Mamba)
            b = std::min<std::int64_t>(b, 1);
        worst = checked_add(worst, b);
    }
    return worst;
}

// allocate_slots: the blocks for `new_tokens` more tokens in every group, or
// false when the pool has too few free blocks for them all (nothing is
// taken then). First each group frees what fell out of its window, even
// when the allocation then fails, as vLLM does.
bool VllmEngine::Impl::allocate(std::size_t r, std::int64_t new_tokens) {
    LiveRequest& l = live_[r];
    const std::int64_t tokens = l.computed + new_tokens;
    std::int64_t need = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        remove_skipped(r, g, l.computed);
        need += std::max<std::int64_t>(0, blocks_for(g, tokens) - static_cast<std::int64_t>(kv(r, g).blocks.size()));
    }
    if (need > pool_->free_count()) return false;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        std::vector<std::int64_t>& blocks = kv(r, g).blocks;
        for (std::int64_t i = static_cast<std::int64_t>(blocks.size()); i < blocks_for(g, tokens); ++i) blocks.push_back(pool_->allocate());
    }
    run_.peak_blocks_used = std::max(run_.peak_blocks_used, pool_->used());
    return true;
}

// Blocks go back in reverse order, group after group, so a request's tail
// is evicted before its prefix (vLLM's free order, which keeps shared
// prefixes longest).
void VllmEngine::Impl::free_blocks(std::size_t r) {
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        GroupBlocks& k = kv(r, g);
        for (auto it = k.blocks.rbegin(); it != k.blocks.rend(); ++it)
            if (*it >= 0) pool_->release(*it);
        k.blocks.clear();
        k.hashed = 0;
        k.skipped = 0;
    }
}

// Whether group g of request r defers its own blocks' map and tags: a
// full-attention group holds every block until the request ends or is
// preempted, so until its first preemption only the request itself holds
// its own blocks and its block table is the map; both are written when it
// is first preempted (keep_own_blocks), the only time they are looked for.
// Windowed groups free blocks mid-run, still cached: they keep the map.
bool VllmEngine::Impl::own_lazy(std::size_t r, std::size_t g) {
    return !kv(r, g).own_kept && groups_[g].kind == KvGroupKind::Full;
}

// Before a request's blocks are freed for its first preemption: which
// block caches each of its own full positions, each tagged with its
// content, for its recompute to find them again.
void VllmEngine::Impl::keep_own_blocks(std::size_t r) {
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        if (!own_lazy(r, g)) continue;
        GroupBlocks& k = kv(r, g);
        k.own_kept = true;
        k.own.assign(static_cast<std::size_t>(k.hashed), -1);
        for (std::int64_t j = shared_blocks(r, g); j < k.hashed; ++j) {
            const std::int64_t block = k.blocks[static_cast<std::size_t>(j)];
            if (block < 0) continue;
            k.own[static_cast<std::size_t>(j)] = block;
            pool_->set_private(block, private_tag(r, g, j));
        }
    }
}

void VllmEngine::Impl::preempt(std::size_t r) {
    if (c_.prefix_caching) keep_own_blocks(r);
    run_.preemptions += 1;
    records_[r].preemptions += 1;
    run_.recomputed_tokens += live_[r].computed;
    free_blocks(r);
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
bool VllmEngine::Impl::schedule_running(std::int64_t& budget) {
    bool preempted = false;
    for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
        const std::size_t r = running_[i];
        // A decode carries k drafts, cut by the budget as vLLM cuts
        // num_new_tokens (the spec tokens beyond it are not scheduled).
        const std::int64_t drafts = c_.spec.k > 0 && decoding(r) ? c_.spec.k : 0;
        const std::int64_t n = cap(total_tokens(r) + drafts - live_[r].computed, budget);
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

// One spec's cache hit of at most `max_len` tokens (the managers'
// find_longest_cache_hit, single_type_kv_cache_manager.py), a block counting
// only when every group of the spec has it cached: full attention the
// leading blocks; a sliding window the rightmost run of
// ceil((window - 1) / block) cached blocks (what the next token attends
// to), null blocks before it, or failing that a run from the first block;
// chunked attention the cached blocks from the start of the last chunk.
// Lengths are cut to a multiple of hit_align_. Fills out.blocks for the
// spec's groups; returns the hit's tokens.
std::int64_t VllmEngine::Impl::type_hit(std::size_t r, const HitType& t, std::int64_t max_len, Hits& out) {
    const std::int64_t bs = t.spec.block_tokens, m = max_len / bs;
    std::vector<std::int64_t> found(t.groups.size());
    const auto cached_all = [&](std::int64_t j) {
        for (std::size_t i = 0; i < t.groups.size(); ++i) {
            const auto b = cached_block(r, t.groups[i], j);
            if (!b) return false;
            found[i] = *b;
        }
        return true;
    };
    const auto put = [&](std::int64_t j) {
        for (std::size_t i = 0; i < t.groups.size(); ++i) out.blocks[t.groups[i]][static_cast<std::size_t>(j)] = found[i];
    };
    const auto resize = [&](std::int64_t n) {
        for (std::size_t g : t.groups) out.blocks[g].resize(static_cast<std::size_t>(n), -1);
    };
    const auto align = [&](std::int64_t n) {
        while (n > 0 && n * bs % hit_align_ != 0) --n;
        resize(n);
        return n * bs;
    };
    for (std::size_t g : t.groups) out.blocks[g].clear();
    if (t.spec.kind == KvGroupKind::Full) {
        std::int64_t n = 0;
        for (; n < m && cached_all(n); ++n) {
            resize(n + 1);
            put(n);
        }
        return align(n);
    }
    if (t.spec.kind == KvGroupKind::Chunked) {
        const std::int64_t start = max_len / t.spec.window_tokens * t.spec.window_tokens / bs;
        resize(start);
        std::int64_t n = start;
        for (; n < m && cached_all(n); ++n) {
            resize(n + 1);
            put(n);
        }
        return n * bs;
    }
    // Sliding window: right to left, stopping at the first long enough run.
    const std::int64_t needed = (t.spec.window_tokens - 1 + bs - 1) / bs;
    resize(m);
    std::int64_t run = 0;
    for (std::int64_t i = m - 1; i >= 0; --i) {
        if (!cached_all(i)) {
            run = 0;
            continue;
        }
        if (run == 0 && bs != hit_align_ && (i + 1) * bs % hit_align_ != 0) continue;
        put(i);
        ++run;
        if (run >= needed) {
            resize(i + run);
            return (i + run) * bs;
        }
    }
    return align(run);
}

// The prefix-cache hit of a waiting request (kv_cache_coordinator.py): one
// group's rule when it is the only spec (UnitaryKVCacheCoordinator),
// otherwise HybridKVCacheCoordinator's fixed point: every spec in turn cuts
// the candidate length to its own hit, until a pass over them all cuts
// nothing (one pass for full attention plus one other spec); full-attention
// blocks are then cut to the length.
VllmEngine::Impl::Hits VllmEngine::Impl::find_hits(std::size_t r, std::int64_t max_len) {
    Hits h;
    h.blocks.resize(groups_.size());
    if (hit_types_.empty()) return h;
    std::vector<bool> done(hit_types_.size(), false);
    const bool simple = hit_types_.size() == 2 && hit_types_[0].spec.kind == KvGroupKind::Full;
    std::int64_t length = max_len;
    for (;;) {
        std::int64_t cur = length;
        for (std::size_t i = 0; i < hit_types_.size(); ++i) {
            const HitType& t = hit_types_[i];
            if (t.spec.kind == KvGroupKind::Full && done[i]) cur = cur / t.spec.block_tokens * t.spec.block_tokens;
            else cur = type_hit(r, t, cur, h);
            done[i] = true;
        }
        const bool shorter = cur < length;
        length = std::min(cur, length);
        if (!shorter || simple || hit_types_.size() == 1) break;
    }
    for (const HitType& t : hit_types_)
        if (t.spec.kind == KvGroupKind::Full)
            for (std::size_t g : t.groups) h.blocks[g].resize(static_cast<std::size_t>(length / t.spec.block_tokens));
    h.tokens = length;
    return h;
}

// A waiting request: its cached prefix, then its first chunk. False when its
// blocks cannot be had (the admission stops there).
bool VllmEngine::Impl::admit(std::size_t r, std::int64_t& budget) {
    LiveRequest& l = live_[r];
    // Its prompt and every output token but the last (whose KV is never
    // written) must fit the whole pool, or it would preempt itself forever.
    // vLLM refuses such a pool at start-up (max_model_len must fit,
    // kv_cache_utils.py _check_enough_kv_cache_memory); a pool set with
    // --num-gpu-blocks can be smaller, and then the request is rejected.
    if (worst_blocks(w_.requests[r].input_tokens + w_.requests[r].output_tokens - 1) > pool_->total()) {
        records_[r].rejected = true;
        waiting_.pop_front();
        ++done_;
        return true;
    }
    if (remote_ && remote_state_[r] != 3) return admit_remote(r, budget);
    const bool first = records_[r].scheduled_s < 0;  // not a preempted request coming back
    // At most all but the last token: its logits must be computed (get_computed_blocks).
    Hits hits = c_.prefix_caching ? find_hits(r, total_tokens(r) - 1) : Hits{0, std::vector<std::vector<std::int64_t>>(groups_.size())};
    const std::int64_t cached = hits.tokens;
    if (cpu_) {
        // get_num_new_matched_tokens: the blocks right after the GPU hit
        // that the CPU tier holds are loaded first, asynchronously.
        const std::int64_t more = tier_hit_blocks(r, cached, total_tokens(r) - 1);
        if (more > 0) return start_load(r, hits, more);
    }
    const std::int64_t n = cap(total_tokens(r) - cached, budget);
    if (n <= 0) return false;
    // get_num_blocks_to_allocate: per group, the blocks past the hit (and
    // past the window's skipped blocks) plus the cached hits now free, which
    // leave the free queue when touched.
    std::int64_t need = 0;
    std::vector<std::int64_t> skip(groups_.size());
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        const std::vector<std::int64_t>& b = hits.blocks[g];
        skip[g] = std::min<std::int64_t>(skipped_tokens(g, cached) / groups_[g].block_tokens, static_cast<std::int64_t>(b.size()));
        need += std::max<std::int64_t>(0, blocks_for(g, cached + n) - static_cast<std::int64_t>(b.size()));
        for (std::size_t j = static_cast<std::size_t>(skip[g]); j < b.size(); ++j)
            if (b[j] >= 0 && pool_->is_free(b[j])) ++need;
    }
    if (need > pool_->free_count()) return false;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        GroupBlocks& k = kv(r, g);
        k.blocks = std::move(hits.blocks[g]);
        k.blocks.reserve(static_cast<std::size_t>(blocks_for(g, w_.requests[r].input_tokens + w_.requests[r].output_tokens)));  // one allocation
        for (std::size_t j = 0; j < k.blocks.size(); ++j) {
            std::int64_t& b = k.blocks[j];
            if (static_cast<std::int64_t>(j) < skip[g]) b = -1;  // skipped: a null block
            else if (b >= 0) pool_->touch(b);
        }
        // Leading null blocks: the skipped ones, and with a chunk that is not
        // a whole number of blocks also the chunk's first block or so.
        k.skipped = 0;
        while (k.skipped < static_cast<std::int64_t>(k.blocks.size()) && k.blocks[static_cast<std::size_t>(k.skipped)] < 0) ++k.skipped;
        k.hashed = static_cast<std::int64_t>(k.blocks.size());
    }
    l.computed = cached;
    allocate(r, n);  // cannot fail: the free blocks were counted above
    if (first) {
        run_.prompt_tokens += w_.requests[r].input_tokens;
        run_.prefix_hit_tokens += cached;
        run_.cpu_hit_tokens += std::min(l.cpu_loaded, cached);
        records_[r].cached_tokens = cached;
        records_[r].scheduled_s = t_;
    }
    waiting_.pop_front();
    running_.push_back(r);
    step_.push_back({r, n});
    budget -= n;
    return true;
}

void VllmEngine::Impl::schedule_waiting(std::int64_t& budget) {
    if (cpu_ && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_num_seqs) finish_loads();
    // Disaggregated decode: a preempted head that cannot finish in the free
    // blocks lets the loaded requests behind it go first (disagg.cpp).
    if (remote_ && running_.empty() && !waiting_.empty() && head_starved()) admit_loaded_behind_head(budget);
    while (!waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_num_seqs)
        if (!admit(waiting_.front(), budget)) break;
    if (remote_ && running_.empty() && step_.empty() && !waiting_.empty()) admit_loaded_behind_head(budget);
}

// Full blocks of a request enter the prefix cache once their KV is computed,
// in every group (a group's null blocks excepted).
void VllmEngine::Impl::register_full_blocks(std::size_t r) {
    const std::int64_t computed = live_[r].computed;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        GroupBlocks& k = kv(r, g);
        const std::int64_t full = std::min<std::int64_t>(computed / groups_[g].block_tokens, static_cast<std::int64_t>(k.blocks.size()));
        // A lazy group's own blocks wait for a first preemption to be tagged (own_lazy).
        const std::int64_t end = own_lazy(r, g) ? std::min(full, shared_blocks(r, g)) : full;
        const std::int64_t from = k.hashed;
        for (; k.hashed < end; ++k.hashed) cache_block(r, g, k.hashed);
        k.hashed = std::max(k.hashed, full);
        if (cpu_) store_blocks(r, from, k.hashed);
    }
}

double append_samples(std::vector<TimePoint>& series, TimePoint p, double until) {
    if (!(p.t_s <= until) || !std::isfinite(until)) throw std::logic_error("a sample past the time it was taken at");
    p.seconds = 1;
    if (p.prompt_tokens_per_s == 0 && p.generation_tokens_per_s == 0) {
        // Whole seconds t_s, t_s + 1, ... up to `until`; integers below 2^53
        // add exactly, so the two corrections settle any rounding of the cast.
        std::int64_t k = static_cast<std::int64_t>(until - p.t_s);
        while (k > 0 && p.t_s + static_cast<double>(k) > until) --k;
        while (p.t_s + static_cast<double>(k + 1) <= until) ++k;
        p.seconds = k + 1;
    }
    if (!series.empty() && series.back().same_line(p) &&
        series.back().t_s + static_cast<double>(series.back().seconds) == p.t_s)
        series.back().seconds += p.seconds;
    else
        series.push_back(p);
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
        p.waiting = static_cast<std::int64_t>(waiting_.size() + loading_.size() + remote_loading_.size());
        p.kv_cache_usage = pool_->total() > 0 ? static_cast<double>(pool_->used()) / static_cast<double>(pool_->total()) : 0;
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

// The scheduled step's sequences into work_; returns the proposer's time.
double VllmEngine::Impl::plan_work() {
    work_.clear();
    std::int64_t spec_seqs = 0, spec_context = 0;
    for (const auto& [r, n] : step_) {
        work_.push_back(SeqWork{live_[r].computed, n});
        if (c_.spec.k > 0 && decoding(r)) {
            spec_seqs += 1;
            spec_context += live_[r].computed;
        }
    }
    // The proposer runs after the target's forward pass, in the same engine
    // step (gpu_model_runner.py, propose_draft_token_ids).
    return spec_seqs > 0 && c_.spec.draft_s ? c_.spec.draft_s(spec_seqs, spec_context) : 0.0;
}

void VllmEngine::Impl::apply_step() {
    const double draft = plan_work();
    commit_step(price_(work_) + draft);
}

void VllmEngine::Impl::sync_to(double t) {
    if (!(t >= t_)) throw std::logic_error("lockstep: a rank's clock moved back");
    t_ = t;
    sample(t_);
}

bool VllmEngine::Impl::plan_step() {
    if (!stages_.empty()) throw std::logic_error("lockstep: a rank with a pipeline");
    plan_done_before_ = done_;
    arrive();
    for (;;) {
        step_.clear();
        work_.clear();
        planned_draft_s_ = 0;
        // As advance(): nothing runs and the queue's head waits for blocks
        // that loads hold, or nothing is queued but loads.
        if (running_.empty() && wait_load_s_ > t_) return false;
        if (running_.empty() && waiting_.empty() && !(cpu_ && next_load_s() <= t_)) return false;
        const std::int64_t done_before = done_;
        std::int64_t budget = c_.max_num_batched_tokens;
        if (schedule_running(budget)) schedule_waiting(budget);
        if (!step_.empty()) break;
        // A request preempted itself or was rejected: the queue's head meets
        // an empty pool, which admits or rejects it next pass (as advance()).
        if (!running_.empty()) throw std::logic_error("the scheduler found nothing to run");
        // The head waits for blocks that loads hold (a pull from a prefill
        // instance, or the CPU tier): the rank plans nothing before the first
        // load ends (the group idles it till then). With the queue empty, its
        // next step is the next arrival's or the first load's end.
        if (done_ == done_before) {
            if (!waiting_.empty() && (!loading_.empty() || !remote_loading_.empty()))
                wait_load_s_ = std::min(cpu_ ? next_load_s() : std::numeric_limits<double>::infinity(), next_loaded_s());
            return false;
        }
    }
    planned_draft_s_ = plan_work();
    return true;
}

void VllmEngine::Impl::idle_step(double dt) {
    if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a wave priced at a non-positive time");
    last_step_start_ = t_;
    t_ += dt;
    last_step_done_ = done_ - plan_done_before_;  // rejected while planning
    sample(t_);
}

// The step in step_ / work_ ends dt from now.
void VllmEngine::Impl::commit_step(double dt) {
    if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a step priced at a non-positive time");
    last_step_start_ = t_;
    t_ += dt;
    run_.steps += 1;
    finished_.clear();
    for (const auto& [r, n] : step_) {
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
        free_blocks(r);
        live_[r].kv = {};
        ++done_;
    }
    if (!finished_.empty())
        std::erase_if(running_, [&](std::size_t r) { return records_[r].finish_s >= 0; });
}

// Pipeline: the batch just scheduled (step_) enters stage 0. Its tokens
// count as computed now, as vLLM's scheduler advances num_computed_tokens
// when it schedules (_update_after_schedule): a request whose output is in
// flight then has no token left to compute and is skipped, and a chunked
// prefill can send its next chunk in the next batch.
void VllmEngine::Impl::submit_batch() {
    work_.clear();
    for (const auto& [r, n] : step_) work_.push_back(SeqWork{live_[r].computed, n});
    InFlight b;
    double ready = t_;  // stage 0 may start once scheduled
    for (std::size_t j = 0; j < stages_.size(); ++j) {
        const double dt = stages_[j](work_);
        if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("a pipeline stage priced at a non-positive time");
        const double start = std::max(ready, stage_free_s_[j]);
        ready = stage_free_s_[j] = start + dt;
    }
    b.end_s = ready;
    for (const auto& [r, n] : step_) {
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
    for (;;) {
        arrive();
        const bool work = !running_.empty() || !waiting_.empty();
        if (work && !stalled_ && in_flight_.size() < depth) {
            if (t_ >= horizon) return;
            const std::int64_t done_before = done_;
            step_.clear();
            std::int64_t budget = c_.max_num_batched_tokens;
            if (schedule_running(budget)) schedule_waiting(budget);
            if (!step_.empty()) submit_batch();
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
        if (inbox_.empty()) return;
        // Idle: jump to the next arrival.
        const double next = records_[inbox_.front()].arrival_s;
        if (next >= horizon) return;
        t_ = std::max(t_, next);
        sample(t_);
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
    if (groups_.size() != 1 || groups_[0].kind != KvGroupKind::Full) return false;
    if (cpu_ && !loading_.empty()) return false;  // a load ending would admit a request mid-run
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
        if (static_cast<std::int64_t>(crossing.size()) > pool_->free_count()) break;
        const std::optional<double> dt = decode_(batch, checked_add(context_sum, checked_mul(k, batch)));
        if (!dt) break;
        if (!(*dt > 0) || !std::isfinite(*dt)) throw std::logic_error("a step priced at a non-positive time");
        for (std::size_t r : crossing) kv(r, 0).blocks.push_back(pool_->allocate());
        run_.peak_blocks_used = std::max(run_.peak_blocks_used, pool_->used());
        const double start = t_;
        last_step_start_ = t_;
        t_ += *dt;
        run_.steps += 1;
        run_.decode_run_steps += 1;
        if (c_.prefix_caching)
            for (std::size_t r : at_boundary(k + 1)) {  // their last block is now full
                GroupBlocks& l = kv(r, 0);
                if (!own_lazy(r, 0) || l.hashed < shared_blocks(r, 0)) cache_block(r, 0, l.hashed);
                if (cpu_) store_blocks(r, l.hashed, l.hashed + 1);
                ++l.hashed;
            }
        // Every request's last token came with the previous step, except on
        // the run's first step (their own times).
        if (k == 0)
            for (std::size_t r : running_) run_.itl_s.push_back(t_ - live_[r].last_token_s);
        else
            run_.itl_s.add(t_ - start, batch);
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

void VllmEngine::Impl::advance(double horizon, bool stop_on_done) {
    if (!stages_.empty()) return advance_pipeline(horizon, stop_on_done);
    for (;;) {
        arrive();
        if (cpu_ && running_.empty() && wait_load_s_ > t_) {
            // Nothing runs and the queue's head waits for blocks that loads hold.
            if (wait_load_s_ >= horizon) return;
            t_ = wait_load_s_;
            sample(t_);
            continue;
        }
        if (running_.empty() && waiting_.empty() && !(cpu_ && next_load_s() <= t_)) {
            if (inbox_.empty() && !(cpu_ && !loading_.empty()) && remote_loading_.empty()) return;
            // Idle: jump to the next arrival (or the end of a load, from host memory or a prefill instance).
            double next = inbox_.empty() ? std::numeric_limits<double>::infinity() : records_[inbox_.front()].arrival_s;
            if (cpu_) next = std::min(next, next_load_s());
            next = std::min(next, next_loaded_s());
            if (next >= horizon) return;
            t_ = std::max(t_, next);
            sample(t_);
            continue;
        }
        if (t_ >= horizon) return;
        const std::int64_t done_before = done_;
        // A run of speculative steps is not identical step to step (each keeps a drawn number of tokens).
        if (c_.jump_decode_runs && decode_ && c_.spec.k == 0 && decode_run(horizon)) continue;  // a run finishes nothing
        step_.clear();
        std::int64_t budget = c_.max_num_batched_tokens;
        if (schedule_running(budget)) schedule_waiting(budget);
        if (step_.empty()) {
            // A request preempted itself or was rejected: the queue's head
            // now meets an empty pool, which admits or rejects it next pass.
            if (!running_.empty()) throw std::logic_error("the scheduler found nothing to run");
            // The queue's head waits for blocks that loads hold (KV pulled
            // from a prefill instance, or loading from the CPU tier): nothing
            // is admitted before the first load ends. With the queue empty
            // instead, the idle jump above also takes the next arrival.
            if (!waiting_.empty() && done_ == done_before) {
                if (!remote_loading_.empty()) {
                    const double next = next_loaded_s();
                    if (next >= horizon) return;
                    t_ = std::max(t_, next);
                    sample(t_);
                }
                if (cpu_ && !loading_.empty()) wait_load_s_ = next_load_s();
            }
        } else {
            apply_step();
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
    if (running_.empty() && wait_load_s_ > t_) return wait_load_s_;
    if (cpu_ && running_.empty()) {
        if (waiting_.empty() && !loading_.empty()) {
            const double next = inbox_.empty() ? next_load_s() : std::min(next_load_s(), records_[inbox_.front()].arrival_s);
            return std::max(t_, next);
        }
    }
    if (!running_.empty() || !waiting_.empty()) return t_;
    if (!inbox_.empty() || !remote_loading_.empty())
        return std::max(t_, std::min(inbox_.empty() ? std::numeric_limits<double>::infinity() : records_[inbox_.front()].arrival_s,
                                     next_loaded_s()));
    return std::nullopt;
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
    return std::move(run_);
}

// ---- VllmEngine: the public face of its Impl ----

VllmEngine::VllmEngine(const Workload& w, const SchedulerConfig& c, const StepPricer& price, const DecodePricer& decode, bool check,
                       RequestStates& states, const StagePricers& stages)
    : impl_(std::make_unique<Impl>(w, c, price, decode, check, states, stages)) {}
VllmEngine::~VllmEngine() = default;
VllmEngine::VllmEngine(VllmEngine&&) noexcept = default;
void VllmEngine::add(std::size_t r) { impl_->add(r); }
std::optional<double> VllmEngine::next_step_s() const { return impl_->next_step_s(); }
void VllmEngine::advance(double horizon, bool stop_on_done) { impl_->advance(horizon, stop_on_done); }
std::int64_t VllmEngine::outstanding_at(double t) const { return impl_->outstanding_at(t); }
std::int64_t VllmEngine::done() const { return impl_->done(); }
double VllmEngine::now() const { return impl_->now(); }
const SimRun& VllmEngine::totals() const { return impl_->totals(); }
SimRun VllmEngine::take_totals() { return impl_->take_totals(); }
bool VllmEngine::idle() const { return impl_->idle(); }
std::int64_t VllmEngine::waiting_count() const { return impl_->waiting_count(); }
std::int64_t VllmEngine::running_count() const { return impl_->running_count(); }
void VllmEngine::sync_to(double t) { impl_->sync_to(t); }
bool VllmEngine::plan_step() { return impl_->plan_step(); }
const std::vector<SeqWork>& VllmEngine::planned_work() const { return impl_->planned_work(); }
double VllmEngine::planned_draft_s() const { return impl_->planned_draft_s(); }
void VllmEngine::commit_step(double dt) { impl_->commit_step(dt); }
void VllmEngine::idle_step(double dt) { impl_->idle_step(dt); }
void VllmEngine::set_remote_prefill(RemoteLoad load) { impl_->set_remote_prefill(std::move(load)); }

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
