// The KV-cache side of one vLLM engine (vllm/v1/core/kv_cache_manager.py,
// KVCacheManager, with its coordinator, kv_cache_coordinator.py, and the
// per-group managers, single_type_kv_cache_manager.py): the block pool, the
// KV-cache groups, the chained block hashes of the prefix cache and the hit
// lookup. The scheduler (VllmEngine, scheduler.cpp) calls vLLM's verbs:
// get_computed_blocks for a waiting request's prefix-cache hit,
// allocate_slots for a step's new tokens, free when a request finishes or
// is preempted, cache_full_blocks once a step's KV is computed. Internal to
// src/core/sim.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/sim/block_pool.hpp"
#include "core/sim/scheduler.hpp"

namespace kvplan {

// SplitMix64's finalizer (Steele, Lea and Flood, OOPSLA 2014), a bijection
// that scatters structured inputs (small ids, offsets).
inline std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Both inputs scrambled: a boost-style shift-and-add combine collided on the
// small ids traces use (false prefix hits, 3 in 10^6 tokens on the Azure
// trace, which shares nothing).
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
    return splitmix(a ^ splitmix(b));
}

class KvCacheManager {
public:
    // A prefix-cache hit: its tokens and, per group, its blocks (-1 where a
    // null block stands in).
    struct Hits {
        std::int64_t tokens = 0;
        std::vector<std::vector<std::int64_t>> blocks;
    };

    // The requests' block tables live in `live` (LiveRequest::kv); the most
    // blocks ever used goes to `peak_blocks_used`.
    KvCacheManager(const Workload& w, const SchedulerConfig& c, std::vector<LiveRequest>& live, std::int64_t& peak_blocks_used);

    BlockPool& pool() { return pool_; }
    const BlockPool& pool() const { return pool_; }
    const std::vector<KvGroup>& groups() const { return groups_; }

    // ---- vLLM's verbs ----
    // get_computed_blocks: the longest cached prefix of r of at most
    // `max_len` tokens, in every group.
    Hits get_computed_blocks(std::size_t r, std::int64_t max_len);
    // allocate_slots: the blocks for `new_tokens` more tokens past r's
    // computed ones; false when the pool cannot give them (nothing taken).
    bool allocate_slots(std::size_t r, std::int64_t new_tokens);
    // allocate_slots with new_computed_blocks: a waiting request takes its
    // hit (r's computed tokens become hits.tokens) and the blocks for
    // `new_tokens` more; false when the pool cannot give them all.
    bool allocate_slots(std::size_t r, Hits& hits, std::int64_t new_tokens);
    // free: r's blocks go back, tail first, group after group.
    void free(std::size_t r);
    // cache_full_blocks: r's blocks that its computed tokens filled enter
    // the prefix cache; returns the first group's newly full blocks [from, to).
    std::pair<std::int64_t, std::int64_t> cache_full_blocks(std::size_t r);
    // Before r's first preemption frees its blocks: its own blocks tagged,
    // for its recompute to find them again.
    void keep_own_blocks(std::size_t r);

    // The hit of a waiting request the pool could not admit (the blocked
    // queue head), remembered: get_computed_blocks(r, max_len) answers from
    // it until the pool's watch fires (a block of the hit evicted, or the
    // content just past it cached), the only changes that alter the answer
    // (docs/simulate.md, "Speed"). One full-attention group only; off with
    // SchedulerConfig::remember_blocked_hit false.
    void remember_hit(std::size_t r, std::int64_t max_len, const Hits& h);
    // r left the queue some other way (a load from the CPU tier started).
    void forget_hit(std::size_t r);
    std::int64_t remembered_answers() const { return remembered_answers_; }

    // ---- What the connectors and the decode-run jump reach for ----
    GroupBlocks& kv(std::size_t r, std::size_t g) {
        std::vector<GroupBlocks>& k = live_[r].kv;
        if (k.size() < groups_.size()) k.resize(groups_.size());
        return k[g];
    }
    std::int64_t blocks_for(std::size_t g, std::int64_t tokens) const { return (tokens + groups_[g].block_tokens - 1) / groups_[g].block_tokens; }
    std::int64_t worst_blocks(std::int64_t tokens) const;
    std::int64_t shared_blocks(std::size_t r, std::size_t g);
    std::uint64_t block_hash(std::size_t r, std::size_t g, std::int64_t j);
    std::uint64_t private_tag(std::size_t r, std::size_t g, std::int64_t j) const;
    void cache_block(std::size_t r, std::size_t g, std::int64_t j);
    bool own_lazy(std::size_t r, std::size_t g);
    // The most blocks used so far, after blocks were taken outside allocate_slots.
    void note_peak() { peak_ = std::max(peak_, pool_.used()); }

private:
    struct HitType {  // groups of one spec, looked up together (HybridKVCacheCoordinator)
        KvGroup spec;
        std::vector<std::size_t> groups;
    };
    std::uint64_t block_key(std::size_t r, std::int64_t j, std::int64_t bs) const;
    bool keyed(std::size_t r, std::int64_t j, std::int64_t bs) const;
    std::optional<std::int64_t> cached_block(std::size_t r, std::size_t g, std::int64_t j);
    std::int64_t skipped_tokens(std::size_t g, std::int64_t computed) const;
    void remove_skipped(std::size_t r, std::size_t g, std::int64_t computed);
    std::int64_t type_hit(std::size_t r, const HitType& t, std::int64_t max_len, Hits& out);

    const Workload& w_;
    const SchedulerConfig& c_;
    std::vector<LiveRequest>& live_;
    std::int64_t& peak_;
    BlockPool pool_;
    std::vector<KvGroup> groups_;        // c_.groups, or the one full-attention group
    std::vector<std::size_t> chain_of_;  // per group: the first group of its block size (whose hashes it shares)
    std::vector<HitType> hit_types_;     // full attention first; Mamba groups take no part
    std::int64_t hit_align_ = 1;         // the hit length is a multiple of this (lcm of the block sizes)
    struct Remembered {                  // remember_hit's
        bool valid = false;
        std::size_t r = 0;
        std::int64_t max_len = 0;
        Hits hits;
    };
    Remembered remembered_;
    std::int64_t remembered_answers_ = 0;  // lookups answered from it
};

}  // namespace kvplan
