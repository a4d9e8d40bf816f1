#include "core/sim/block_pool.hpp"

#include <limits>
#include <stdexcept>

#include "core/sim/invariant.hpp"

namespace kvplan {

BlockPool::HashIndex::HashIndex(std::int64_t blocks) : key_of_(static_cast<std::size_t>(blocks), 0) {
    if (blocks > std::numeric_limits<std::int32_t>::max() / 2) throw std::length_error("block pool: too many blocks for its index");
    std::size_t capacity = 16;
    int bits = 4;
    while (capacity < 2 * static_cast<std::size_t>(blocks)) {
        capacity *= 2;
        ++bits;
    }
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 32 - bits;
}

std::optional<std::int64_t> BlockPool::HashIndex::find(std::uint64_t key) const {
    const std::uint32_t t = tag(key);
    for (std::size_t i = home(t);; i = (i + 1) & mask_) {
        const Slot& s = slots_[i];
        if (s.block < 0) return std::nullopt;
        if (s.tag == t && key_of_[static_cast<std::size_t>(s.block)] == key) return s.block;
    }
}

bool BlockPool::HashIndex::insert(std::uint64_t key, std::int64_t block) {
    const std::uint32_t t = tag(key);
    std::size_t i = home(t);
    for (; slots_[i].block >= 0; i = (i + 1) & mask_)
        if (slots_[i].tag == t && key_of_[static_cast<std::size_t>(slots_[i].block)] == key) return false;
    slots_[i] = Slot{t, static_cast<std::int32_t>(block)};
    key_of_[static_cast<std::size_t>(block)] = key;
    ++size_;
    return true;
}

// Backward-shift deletion (Knuth, TAOCP vol. 3, 6.4, algorithm R): entries
// after the hole that probed past it move back, so no tombstones pile up.
void BlockPool::HashIndex::erase(std::int64_t block, std::uint64_t key) {
    std::size_t hole = home(tag(key));
    while (slots_[hole].block != block) hole = (hole + 1) & mask_;
    for (std::size_t j = (hole + 1) & mask_; slots_[j].block >= 0; j = (j + 1) & mask_) {
        // The entry at j may fill the hole unless its home slot lies in (hole, j], cyclically.
        const std::size_t h = home(slots_[j].tag);
        const bool home_between = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
        if (!home_between) {
            slots_[hole] = slots_[j];
            hole = j;
        }
    }
    slots_[hole].block = -1;
    --size_;
}

BlockPool::BlockPool(std::int64_t blocks)
    : ref_(static_cast<std::size_t>(blocks), 0), prev_(static_cast<std::size_t>(blocks), -1), next_(static_cast<std::size_t>(blocks), -1),
      hash_(static_cast<std::size_t>(blocks)), indexed_(static_cast<std::size_t>(blocks), false), by_hash_(blocks) {
    for (std::int64_t b = 0; b < blocks; ++b) push_tail(b);
}

void BlockPool::unlink(std::int64_t b) {
    const auto i = static_cast<std::size_t>(b);
    if (prev_[i] >= 0) next_[static_cast<std::size_t>(prev_[i])] = next_[i];
    else head_ = next_[i];
    if (next_[i] >= 0) prev_[static_cast<std::size_t>(next_[i])] = prev_[i];
    else tail_ = prev_[i];
    prev_[i] = next_[i] = -1;
    --free_count_;
}

void BlockPool::push_tail(std::int64_t b) {
    const auto i = static_cast<std::size_t>(b);
    prev_[i] = tail_;
    next_[i] = -1;
    if (tail_ >= 0) next_[static_cast<std::size_t>(tail_)] = b;
    else head_ = b;
    tail_ = b;
    ++free_count_;
}

void BlockPool::touch(std::int64_t b) {
    if (ref_[static_cast<std::size_t>(b)]++ == 0) unlink(b);
}

std::int64_t BlockPool::allocate() {
    const std::int64_t b = head_;
    unlink(b);
    auto& h = hash_[static_cast<std::size_t>(b)];
    if (h) {
        if (watching_ && watched_[static_cast<std::size_t>(b)]) fired_ = true;
        if (indexed_[static_cast<std::size_t>(b)]) by_hash_.erase(b, *h);
        indexed_[static_cast<std::size_t>(b)] = false;
        h.reset();
    }
    ref_[static_cast<std::size_t>(b)] = 1;
    return b;
}

void BlockPool::set_hash(std::int64_t block, std::uint64_t hash) {
    // A second block with content already cached stays uncached (vLLM keeps the first).
    if (by_hash_.insert(hash, block)) {
        if (watching_ && missed_ == hash) fired_ = true;
        hash_[static_cast<std::size_t>(block)] = hash;
        indexed_[static_cast<std::size_t>(block)] = true;
    }
}

void BlockPool::watch(const std::vector<std::int64_t>& found, std::optional<std::uint64_t> missed) {
    unwatch();
    if (watched_.empty()) watched_.assign(ref_.size(), 0);
    for (std::int64_t b : found)
        if (b >= 0) {
            watched_[static_cast<std::size_t>(b)] = 1;
            watched_blocks_.push_back(b);
        }
    missed_ = missed;
    watching_ = true;
}

void BlockPool::unwatch() {
    for (std::int64_t b : watched_blocks_) watched_[static_cast<std::size_t>(b)] = 0;
    watched_blocks_.clear();
    missed_.reset();
    watching_ = fired_ = false;
}

void BlockPool::release(std::int64_t block) {
    if (--ref_[static_cast<std::size_t>(block)] == 0) push_tail(block);
}

// Raw pointers, not iterators: at -O1 (the sanitized and fuzz builds) the
// iterators' operators are calls, each traced, which doubled this walk's time.
KVPLAN_INVARIANT_WALK bool BlockPool::consistent() const {
    const std::int64_t* ref = ref_.data();
    const std::int64_t* next = next_.data();
    const auto n = static_cast<std::int64_t>(ref_.size());
    std::int64_t in_queue = 0;
    for (std::int64_t b = head_; b >= 0; b = next[b]) {
        if (b >= n || ref[b] != 0 || ++in_queue > n) return false;  // a cycle overruns the count
    }
    std::int64_t referenced = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        if (ref[i] < 0) return false;
        referenced += ref[i] > 0;
    }
    return in_queue == free_count_ && in_queue + referenced == n;
}

}  // namespace kvplan
