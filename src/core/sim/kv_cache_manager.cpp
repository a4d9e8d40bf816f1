// vLLM's KV-cache manager (kv_cache_manager.hpp): the block pool, the
// KV-cache groups' block tables, the prefix cache's hashes and its hit
// lookup, as the scheduler (scheduler.cpp) calls them.
#include "core/sim/kv_cache_manager.hpp"

#include <algorithm>
#include <numeric>

#include "core/checked.hpp"

namespace kvplan {

KvCacheManager::KvCacheManager(const Workload& w, const SchedulerConfig& c, std::vector<LiveRequest>& live, std::int64_t& peak_blocks_used)
    : w_(w), c_(c), live_(live), peak_(peak_blocks_used), pool_(c.num_gpu_blocks) {
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
}

// Whether block j is shared content: it lies wholly inside the prompt and
// inside one key's span (one that straddles a span's end also holds the
// request's own tokens).
bool KvCacheManager::keyed(std::size_t r, std::int64_t j, std::int64_t bs) const {
    const SimRequest& q = w_.requests[r];
    const std::int64_t first_token = j * bs;
    const std::int64_t span = q.key_block_tokens > 0 ? first_token / q.key_block_tokens : 0;
    return q.key_block_tokens > 0 && span < static_cast<std::int64_t>(q.content_keys.size()) &&
           first_token + bs <= std::min(q.input_tokens, (span + 1) * q.key_block_tokens);
}

// A shared block's content: its span's key and its offset in the span
// (equal content, equal key, across requests). Precondition: keyed(r, j).
std::uint64_t KvCacheManager::block_key(std::size_t r, std::int64_t j, std::int64_t bs) const {
    const SimRequest& q = w_.requests[r];
    const std::int64_t first_token = j * bs;
    return mix(q.content_keys[static_cast<std::size_t>(first_token / q.key_block_tokens)],
               static_cast<std::uint64_t>(first_token % q.key_block_tokens));
}

// How many leading blocks of group g other requests may share: the chain of
// hashes from the first block the request's own tokens enter is its alone.
// Counted once per block size (by the first group of that size).
std::int64_t KvCacheManager::shared_blocks(std::size_t r, std::size_t g) {
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
void KvCacheManager::cache_block(std::size_t r, std::size_t g, std::int64_t j) {
    GroupBlocks& l = kv(r, g);
    const std::int64_t block = l.blocks[static_cast<std::size_t>(j)];
    if (block < 0) return;  // a null block caches nothing (block_pool.py cache_full_blocks skips them)
    if (j < shared_blocks(r, g)) {
        pool_.set_hash(block, block_hash(r, g, j));
        return;
    }
    if (own_lazy(r, g)) return;
    const std::uint64_t h = private_tag(r, g, j);
    if (static_cast<std::int64_t>(l.own.size()) <= j) l.own.resize(static_cast<std::size_t>(j) + 1, -1);
    std::int64_t& kept = l.own[static_cast<std::size_t>(j)];
    if (kept >= 0 && kept != block && pool_.holds(kept, h)) return;
    kept = block;
    pool_.set_private(block, h);
}

// What a block past the shared ones holds: request r's own tokens at
// position j, equal only to itself, so (r, j) names it; no chain of hashes
// is needed (its chain would pass through the request's own blocks anyway).
// Each group caches its own copy (vLLM keys the cache by block hash and
// group id, block_pool.py BlockHashWithGroupId), so groups after the first
// mix their index in.
std::uint64_t KvCacheManager::private_tag(std::size_t r, std::size_t g, std::int64_t j) const {
    const std::uint64_t tag = splitmix(splitmix(0x7a3c9e11ULL + r) ^ static_cast<std::uint64_t>(j));
    return g == 0 ? tag : mix(tag, g);
}

// The cached block holding block j's content in group g, if any.
std::optional<std::int64_t> KvCacheManager::cached_block(std::size_t r, std::size_t g, std::int64_t j) {
    if (j < shared_blocks(r, g)) return pool_.find(block_hash(r, g, j));
    const std::vector<std::int64_t>& own = kv(r, g).own;
    const std::int64_t kept = j < static_cast<std::int64_t>(own.size()) ? own[static_cast<std::size_t>(j)] : -1;
    if (kept >= 0 && pool_.holds(kept, private_tag(r, g, j))) return kept;
    return std::nullopt;
}

// The chained hash of shared blocks 0..j (vLLM's block hashes: equal only
// if every block before is equal too), extended once per block and kept
// (per block size), with the group's index mixed in past the first group.
// Precondition: j < shared_blocks(r, g).
std::uint64_t KvCacheManager::block_hash(std::size_t r, std::size_t g, std::int64_t j) {
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
std::int64_t KvCacheManager::skipped_tokens(std::size_t g, std::int64_t computed) const {
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
void KvCacheManager::remove_skipped(std::size_t r, std::size_t g, std::int64_t computed) {
    GroupBlocks& k = kv(r, g);
    const std::int64_t n = std::min<std::int64_t>(skipped_tokens(g, computed) / groups_[g].block_tokens, static_cast<std::int64_t>(k.blocks.size()));
    for (std::int64_t i = n - 1; i >= k.skipped; --i) {
        std::int64_t& b = k.blocks[static_cast<std::size_t>(i)];
        if (b >= 0) pool_.release(b);
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
std::int64_t KvCacheManager::worst_blocks(std::int64_t tokens) const {
    const std::int64_t cap =
        c_.long_prefill_token_threshold > 0 ? std::min(c_.long_prefill_token_threshold, c_.max_num_batched_tokens) : c_.max_num_batched_tokens;
    std::int64_t worst = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        const KvGroup& k = groups_[g];
        std::int64_t b = blocks_for(g, tokens);
        if (k.kind == KvGroupKind::Sliding) b = std::min(b, blocks_for(g, std::min(checked_add(k.window_tokens - 1, cap), tokens)) + 1);
        else if (k.kind == KvGroupKind::Chunked)
            b = std::min(b, blocks_for(g, std::min(checked_add(k.window_tokens - 1, cap), tokens)) + (k.window_tokens % k.block_tokens != 0));
        else if (k.kind == KvGroupKind::Mamba) b = std::min<std::int64_t>(b, 1);
        worst = checked_add(worst, b);
    }
    return worst;
}

// allocate_slots: the blocks for `new_tokens` more tokens in every group, or
// false when the pool has too few free blocks for them all (nothing is
// taken then). First each group frees what fell out of its window, even
// when the allocation then fails, as vLLM does.
bool KvCacheManager::allocate_slots(std::size_t r, std::int64_t new_tokens) {
    LiveRequest& l = live_[r];
    const std::int64_t tokens = l.computed + new_tokens;
    std::int64_t need = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        remove_skipped(r, g, l.computed);
        need += std::max<std::int64_t>(0, blocks_for(g, tokens) - static_cast<std::int64_t>(kv(r, g).blocks.size()));
    }
    if (need > pool_.free_count()) return false;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        std::vector<std::int64_t>& blocks = kv(r, g).blocks;
        for (std::int64_t i = static_cast<std::int64_t>(blocks.size()); i < blocks_for(g, tokens); ++i) blocks.push_back(pool_.allocate());
    }
    peak_ = std::max(peak_, pool_.used());
    return true;
}

// Blocks go back in reverse order, group after group, so a request's tail
// is evicted before its prefix (vLLM's free order, which keeps shared
// prefixes longest).
void KvCacheManager::free(std::size_t r) {
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        GroupBlocks& k = kv(r, g);
        for (auto it = k.blocks.rbegin(); it != k.blocks.rend(); ++it)
            if (*it >= 0) pool_.release(*it);
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
bool KvCacheManager::own_lazy(std::size_t r, std::size_t g) {
    return !kv(r, g).own_kept && groups_[g].kind == KvGroupKind::Full;
}

// Before a request's blocks are freed for its first preemption: which
// block caches each of its own full positions, each tagged with its
// content, for its recompute to find them again.
void KvCacheManager::keep_own_blocks(std::size_t r) {
    forget_hit(r);
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        if (!own_lazy(r, g)) continue;
        GroupBlocks& k = kv(r, g);
        k.own_kept = true;
        k.own.assign(static_cast<std::size_t>(k.hashed), -1);
        for (std::int64_t j = shared_blocks(r, g); j < k.hashed; ++j) {
            const std::int64_t block = k.blocks[static_cast<std::size_t>(j)];
            if (block < 0) continue;
            k.own[static_cast<std::size_t>(j)] = block;
            pool_.set_private(block, private_tag(r, g, j));
        }
    }
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
std::int64_t KvCacheManager::type_hit(std::size_t r, const HitType& t, std::int64_t max_len, Hits& out) {
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
KvCacheManager::Hits KvCacheManager::get_computed_blocks(std::size_t r, std::int64_t max_len) {
    if (remembered_.valid && remembered_.r == r && remembered_.max_len == max_len) {
        if (!pool_.watch_fired()) {
            ++remembered_answers_;
            return remembered_.hits;
        }
        forget_hit(r);
    }
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

// The hit's blocks found are those of one full-attention group; the lookup
// stopped at block n, the first not found (or the last one the length
// allows). Only two events change its answer: a found block is evicted
// (its content gone, the hit shorter), or block n's content is cached (the
// hit longer; a block past the request's shared ones is its own and only it
// can cache that, which it cannot while it waits). Everything else (blocks
// touched, freed, other content cached or evicted) leaves it as it is.
void KvCacheManager::remember_hit(std::size_t r, std::int64_t max_len, const Hits& h) {
    if (!c_.remember_blocked_hit || groups_.size() != 1 || groups_[0].kind != KvGroupKind::Full) return;
    if (remembered_.valid && remembered_.r == r && remembered_.max_len == max_len && !pool_.watch_fired()) return;
    const std::int64_t bs = groups_[0].block_tokens, n = static_cast<std::int64_t>(h.blocks[0].size());
    std::optional<std::uint64_t> missed;
    if (n < max_len / bs && n < shared_blocks(r, 0)) missed = block_hash(r, 0, n);
    remembered_.valid = true;
    remembered_.r = r;
    remembered_.max_len = max_len;
    remembered_.hits = h;
    pool_.watch(h.blocks[0], missed);
}

// Once r is admitted (or preempted again) its remembered hit is stale.
void KvCacheManager::forget_hit(std::size_t r) {
    if (!remembered_.valid || remembered_.r != r) return;
    remembered_.valid = false;
    pool_.unwatch();
}

// allocate_slots for a waiting request with its prefix-cache hit
// (new_computed_blocks): get_num_blocks_to_allocate counts, per group, the
// blocks past the hit (and past the window's skipped blocks) plus the
// cached hits now free, which leave the free queue when touched; then the
// hit's blocks are taken and the new tokens' allocated.
bool KvCacheManager::allocate_slots(std::size_t r, Hits& hits, std::int64_t new_tokens) {
    const std::int64_t cached = hits.tokens;
    std::int64_t need = 0;
    std::vector<std::int64_t> skip(groups_.size());
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        const std::vector<std::int64_t>& b = hits.blocks[g];
        skip[g] = std::min<std::int64_t>(skipped_tokens(g, cached) / groups_[g].block_tokens, static_cast<std::int64_t>(b.size()));
        need += std::max<std::int64_t>(0, blocks_for(g, cached + new_tokens) - static_cast<std::int64_t>(b.size()));
        for (std::size_t j = static_cast<std::size_t>(skip[g]); j < b.size(); ++j)
            if (b[j] >= 0 && pool_.is_free(b[j])) ++need;
    }
    if (need > pool_.free_count()) return false;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        GroupBlocks& k = kv(r, g);
        k.blocks = std::move(hits.blocks[g]);
        k.blocks.reserve(static_cast<std::size_t>(blocks_for(g, w_.requests[r].input_tokens + w_.requests[r].output_tokens)));  // one allocation
        for (std::size_t j = 0; j < k.blocks.size(); ++j) {
            std::int64_t& b = k.blocks[j];
            if (static_cast<std::int64_t>(j) < skip[g]) b = -1;  // skipped: a null block
            else if (b >= 0) pool_.touch(b);
        }
        // Leading null blocks: the skipped ones, and with a chunk that is not
        // a whole number of blocks also the chunk's first block or so.
        k.skipped = 0;
        while (k.skipped < static_cast<std::int64_t>(k.blocks.size()) && k.blocks[static_cast<std::size_t>(k.skipped)] < 0) ++k.skipped;
        k.hashed = static_cast<std::int64_t>(k.blocks.size());
    }
    live_[r].computed = cached;
    forget_hit(r);
    allocate_slots(r, new_tokens);  // cannot fail: the free blocks were counted above
    return true;
}

// Full blocks of a request enter the prefix cache once their KV is computed,
// in every group (a group's null blocks excepted).
std::pair<std::int64_t, std::int64_t> KvCacheManager::cache_full_blocks(std::size_t r) {
    const std::int64_t computed = live_[r].computed;
    std::pair<std::int64_t, std::int64_t> first_group{0, 0};
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        GroupBlocks& k = kv(r, g);
        const std::int64_t full = std::min<std::int64_t>(computed / groups_[g].block_tokens, static_cast<std::int64_t>(k.blocks.size()));
        // A lazy group's own blocks wait for a first preemption to be tagged (own_lazy).
        const std::int64_t end = own_lazy(r, g) ? std::min(full, shared_blocks(r, g)) : full;
        const std::int64_t from = k.hashed;
        for (; k.hashed < end; ++k.hashed) cache_block(r, g, k.hashed);
        k.hashed = std::max(k.hashed, full);
        if (g == 0) first_group = {from, k.hashed};
    }
    return first_group;
}

}  // namespace kvplan
