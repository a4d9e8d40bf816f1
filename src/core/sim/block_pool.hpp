// vLLM's KV block pool (vllm/v1/core/block_pool.py, kv_cache_manager.py):
// a fixed number of blocks, each held by the requests that reference it
// (ref_cnt); free blocks wait in an LRU queue, and a free block that still
// holds a full block's content stays findable by its hash until the queue
// hands it out again (prefix caching: the eviction is lazy).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kvplan {

class BlockPool {
public:
    explicit BlockPool(std::int64_t blocks);

    std::int64_t total() const { return static_cast<std::int64_t>(ref_.size()); }
    std::int64_t free_count() const { return free_count_; }
    std::int64_t used() const { return total() - free_count_; }
    std::int64_t cached() const { return by_hash_.size(); }

    // The cached block holding this content, if any, without touching it.
    std::optional<std::int64_t> find(std::uint64_t hash) const { return by_hash_.find(hash); }
    bool is_free(std::int64_t block) const { return ref_[static_cast<std::size_t>(block)] == 0; }
    // How many block-table entries reference it (ref_cnt; invariant checks).
    std::int64_t refs(std::int64_t block) const { return ref_[static_cast<std::size_t>(block)]; }
    // One more reference to a cached block found with find() (taken out of
    // the free queue if it was free).
    void touch(std::int64_t block);
    // Takes the block at the head of the free queue (the least recently
    // freed), evicting the content it cached. Precondition: free_count() > 0.
    std::int64_t allocate();
    // Records that `block` now holds the content `hash` (a full block).
    void set_hash(std::int64_t block, std::uint64_t hash);
    // The same for content no other request can hold (a request's own
    // tokens, chained on them): only its own request, recomputing after a
    // preemption, can look for it again, through the block id it kept, so
    // it is not put in the hash index. Allocation evicts it alike.
    void set_private(std::int64_t block, std::uint64_t hash) { hash_[static_cast<std::size_t>(block)] = hash; }
    // Whether `block` still holds the content `hash` (indexed or private).
    bool holds(std::int64_t block, std::uint64_t hash) const { return hash_[static_cast<std::size_t>(block)] == hash; }
    // Drops one reference; at zero the block joins the tail of the free queue.
    void release(std::int64_t block);

    // The invariant: each block is either referenced or in the free queue.
    bool consistent() const;

    // A watch on one prefix-cache lookup (KvCacheManager's remembered hit
    // of a blocked queue head): it fires when one of `found` loses its
    // content (allocate) or the content `missed` enters the index
    // (set_hash), the only changes that can alter that lookup's answer.
    // One watch at a time; watch() replaces it, unwatch() drops it.
    void watch(const std::vector<std::int64_t>& found, std::optional<std::uint64_t> missed);
    void unwatch();
    bool watch_fired() const { return fired_; }

private:
    // Content hash -> block, open addressing with linear probing: at most
    // one entry per block, so a table of twice the blocks (a power of two)
    // never fills or grows. A slot is 8 bytes: the block and the top 32 bits
    // of the scrambled hash, whose leading bits are the home slot; the full
    // hash, kept per block, is read only when those 32 bits match. A
    // node-based map cost a cache miss and an allocation per block cached,
    // which dominated a simulation's time.
    class HashIndex {
    public:
        explicit HashIndex(std::int64_t blocks);
        std::optional<std::int64_t> find(std::uint64_t key) const;
        bool insert(std::uint64_t key, std::int64_t block);  // false: the key is already there (nothing changes)
        void erase(std::int64_t block, std::uint64_t key);   // the entry must be there
        std::int64_t size() const { return size_; }

    private:
        static std::uint32_t tag(std::uint64_t key) { return static_cast<std::uint32_t>((key * 0x9e3779b97f4a7c15ULL) >> 32); }
        std::size_t home(std::uint32_t t) const { return static_cast<std::size_t>(t >> shift_); }
        struct Slot {
            std::uint32_t tag = 0;
            std::int32_t block = -1;  // -1: empty
        };
        std::vector<Slot> slots_;
        std::vector<std::uint64_t> key_of_;  // per block: the hash it is indexed under
        std::size_t mask_ = 0;
        int shift_ = 0;
        std::int64_t size_ = 0;
    };

    void unlink(std::int64_t b);
    void push_tail(std::int64_t b);

    std::vector<std::int64_t> ref_;
    std::vector<std::int64_t> prev_, next_;           // the free queue, -1 terminated
    std::vector<std::optional<std::uint64_t>> hash_;  // the content each block holds
    std::vector<bool> indexed_;                       // and whether it is in by_hash_
    HashIndex by_hash_;
    std::int64_t head_ = -1, tail_ = -1, free_count_ = 0;
    // The watch: per block whether it is watched (sized on first use), the
    // blocks marked, the content missed, and whether it fired.
    std::vector<char> watched_;
    std::vector<std::int64_t> watched_blocks_;
    std::optional<std::uint64_t> missed_;
    bool watching_ = false, fired_ = false;
};

}  // namespace kvplan
