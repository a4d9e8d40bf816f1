// The CPU tier of vLLM's native KV offloading (OffloadingConnector with the
// CPU spec, `--kv-offloading-size GiB --kv-offloading-backend native`):
// a fixed number of host-memory blocks keyed by the same block hashes the
// GPU prefix cache uses, evicted least recently used first
// (vllm/v1/kv_offload/lru_manager.py, LRUOffloadingManager). Copies run on
// the GPU's host link, one direction each: stores GPU -> host, loads host
// -> GPU, each direction one copy after another (docs/simulate.md, "KV
// offload to CPU").
#pragma once

#include <cstdint>
#include <vector>

namespace kvplan {

struct CpuTierConfig {
    std::int64_t blocks = 0;       // host blocks per rank (cpu_tier_blocks)
    std::int64_t block_bytes = 0;  // one block's KV on one rank (block_size x KV bytes per token per GPU)
    double link_bytes_per_s = 0;   // the host link, per direction (Gpu::host_link_bytes_per_s)
    double latency_s = 0;          // fixed cost per load (none by default)
    bool operator==(const CpuTierConfig&) const = default;
};

// vLLM's per-rank share of --kv-offloading-size (the total over TP x PP
// ranks: NativeOffloadingParser.configure_kv_transfer, kv_bytes_per_rank =
// size / (TP x PP)) in whole blocks of `block_bytes`: floor(size / ranks /
// block_bytes). Throws Error(Usage) naming --cpu-offload when no block fits.
std::int64_t cpu_tier_blocks(std::int64_t total_bytes, std::int64_t ranks, std::int64_t block_bytes);

class CpuTier {
public:
    explicit CpuTier(const CpuTierConfig& c);

    // Block `key` became full on the GPU at `now`: unless the tier holds it
    // already (then it only becomes the most recently used), its copy is
    // queued on the GPU -> host direction, evicting the least recently used
    // block when the tier is full. Returns whether a copy was made.
    bool store(std::uint64_t key, double now);
    // Whether the tier holds `key` and its copy had finished by `now`.
    bool ready(std::uint64_t key, double now) const;
    // Loads `keys` back to the GPU, queued on the host -> GPU direction
    // after the loads before it, from `now`; they become the most recently
    // used. Returns when the last byte has arrived.
    double load(const std::vector<std::uint64_t>& keys, double now);

    std::int64_t size() const { return size_; }
    std::int64_t capacity() const { return c_.blocks; }
    std::int64_t stored_blocks() const { return stored_; }
    std::int64_t loaded_blocks() const { return loaded_; }
    std::int64_t evicted_blocks() const { return evicted_; }
    // Keys held, least recently used first (tests).
    std::vector<std::uint64_t> lru_order() const;

private:
    // The LRU is flat: entries live in a slab (a vector that only grows, up
    // to the tier's blocks; an evicted entry's slot is reused by the store
    // that evicts it), linked by index into a list, least recently used at
    // the head, and found by key through an open-addressing index (linear
    // probing, backward-shift deletion, at most half full). A store, a touch
    // or an eviction allocates nothing once the slab has grown: a
    // std::list node and an unordered_map node per stored block were most
    // of an offloading run's time (docs/simulate.md, "Speed").
    struct Entry {
        std::uint64_t key = 0;
        double ready_s = 0;  // when its copy to host memory ends
        std::int64_t prev = -1, next = -1;
    };
    double copy_s(std::int64_t blocks) const;
    std::int64_t find(std::uint64_t key) const;  // its slot, or -1
    void index_insert(std::uint64_t key, std::int64_t slot);
    void index_erase(std::uint64_t key);
    void grow_index();
    std::size_t home(std::uint64_t key) const { return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> shift_); }
    void unlink(std::int64_t i);
    void push_back(std::int64_t i);

    CpuTierConfig c_;
    std::vector<Entry> slab_;
    std::int64_t head_ = -1, tail_ = -1, size_ = 0;
    std::vector<std::int64_t> index_;  // slot of the entry, -1: empty; a power of two in size
    int shift_ = 64;
    double store_free_s_ = 0, load_free_s_ = 0;  // when each direction of the link is next free
    std::int64_t stored_ = 0, loaded_ = 0, evicted_ = 0;
};

}  // namespace kvplan
