#include "core/sim/cpu_tier.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace kvplan {

std::int64_t cpu_tier_blocks(std::int64_t total_bytes, std::int64_t ranks, std::int64_t block_bytes) {
    if (total_bytes <= 0) usage_error("--cpu-offload: expected a positive size");
    if (ranks <= 0 || block_bytes <= 0) throw std::logic_error("cpu_tier_blocks: ranks and block bytes must be positive");
    // kv_bytes_per_rank = size / ranks, then whole blocks (CPUOffloadingSpec:
    // num_blocks = kv_bytes_per_rank // page bytes of one offloaded block).
    const std::int64_t blocks = total_bytes / ranks / block_bytes;
    if (blocks <= 0)
        usage_error("--cpu-offload: " + std::to_string(total_bytes) + " bytes over " + std::to_string(ranks) + " rank(s) hold no KV block of " +
                    std::to_string(block_bytes) + " bytes per rank");
    return blocks;
}

CpuTier::CpuTier(const CpuTierConfig& c) : c_(c) {
    if (c.blocks <= 0 || c.block_bytes <= 0) usage_error("--cpu-offload: the CPU tier holds no block");
    if (!(c.link_bytes_per_s > 0) || !std::isfinite(c.link_bytes_per_s))
        usage_error("--cpu-offload: the device has no host-link bandwidth to time the copies");
    if (!(c.latency_s >= 0) || !std::isfinite(c.latency_s)) throw std::logic_error("cpu tier: a negative load latency");
    index_.assign(16, -1);
    shift_ = 64 - 4;
}

std::int64_t CpuTier::find(std::uint64_t key) const {
    const std::size_t mask = index_.size() - 1;
    for (std::size_t i = home(key);; i = (i + 1) & mask) {
        const std::int64_t s = index_[i];
        if (s < 0) return -1;
        if (slab_[static_cast<std::size_t>(s)].key == key) return s;
    }
}

void CpuTier::index_insert(std::uint64_t key, std::int64_t slot) {
    if (2 * (size_ + 1) > static_cast<std::int64_t>(index_.size())) grow_index();
    const std::size_t mask = index_.size() - 1;
    std::size_t i = home(key);
    while (index_[i] >= 0) i = (i + 1) & mask;
    index_[i] = slot;
}

// Backward-shift deletion (Knuth, TAOCP vol. 3, 6.4, algorithm R), as the
// block pool's hash index does.
void CpuTier::index_erase(std::uint64_t key) {
    const std::size_t mask = index_.size() - 1;
    std::size_t hole = home(key);
    while (slab_[static_cast<std::size_t>(index_[hole])].key != key) hole = (hole + 1) & mask;
    for (std::size_t j = (hole + 1) & mask; index_[j] >= 0; j = (j + 1) & mask) {
        const std::size_t h = home(slab_[static_cast<std::size_t>(index_[j])].key);
        const bool home_between = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
        if (!home_between) {
            index_[hole] = index_[j];
            hole = j;
        }
    }
    index_[hole] = -1;
}

// Doubles the index and puts every held entry back.
void CpuTier::grow_index() {
    index_.assign(index_.size() * 2, -1);
    --shift_;
    const std::size_t mask = index_.size() - 1;
    for (std::int64_t s = head_; s >= 0; s = slab_[static_cast<std::size_t>(s)].next) {
        std::size_t i = home(slab_[static_cast<std::size_t>(s)].key);
        while (index_[i] >= 0) i = (i + 1) & mask;
        index_[i] = s;
    }
}

void CpuTier::unlink(std::int64_t i) {
    Entry& e = slab_[static_cast<std::size_t>(i)];
    if (e.prev >= 0) slab_[static_cast<std::size_t>(e.prev)].next = e.next;
    else head_ = e.next;
    if (e.next >= 0) slab_[static_cast<std::size_t>(e.next)].prev = e.prev;
    else tail_ = e.prev;
    e.prev = e.next = -1;
}

void CpuTier::push_back(std::int64_t i) {
    Entry& e = slab_[static_cast<std::size_t>(i)];
    e.prev = tail_;
    e.next = -1;
    if (tail_ >= 0) slab_[static_cast<std::size_t>(tail_)].next = i;
    else head_ = i;
    tail_ = i;
}

// bytes / bandwidth, per direction (the host link moves one direction's copies one after another).
double CpuTier::copy_s(std::int64_t blocks) const {
    return static_cast<double>(checked_mul(blocks, c_.block_bytes)) / c_.link_bytes_per_s;
}

bool CpuTier::store(std::uint64_t key, double now) {
    const std::int64_t held = find(key);
    if (held >= 0) {  // already offloaded: prepare_store skips it, touch makes it recent
        unlink(held);
        push_back(held);
        return false;
    }
    std::int64_t slot = 0;
    if (size_ >= c_.blocks) {  // LRUOffloadingManager.prepare_store evicts the least recently used
        slot = head_;
        index_erase(slab_[static_cast<std::size_t>(slot)].key);
        unlink(slot);
        --size_;
        ++evicted_;
    } else {
        slot = static_cast<std::int64_t>(slab_.size());
        slab_.emplace_back();
    }
    store_free_s_ = std::max(store_free_s_, now) + copy_s(1);
    Entry& e = slab_[static_cast<std::size_t>(slot)];
    e.key = key;
    e.ready_s = store_free_s_;
    index_insert(key, slot);
    push_back(slot);
    ++size_;
    ++stored_;
    return true;
}

bool CpuTier::ready(std::uint64_t key, double now) const {
    const std::int64_t held = find(key);
    return held >= 0 && slab_[static_cast<std::size_t>(held)].ready_s <= now;
}

double CpuTier::load(const std::vector<std::uint64_t>& keys, double now) {
    for (std::uint64_t k : keys) {
        const std::int64_t held = find(k);
        if (held < 0) throw std::logic_error("cpu tier: loading a block it does not hold");
        unlink(held);
        push_back(held);
    }
    const auto n = static_cast<std::int64_t>(keys.size());
    loaded_ += n;
    load_free_s_ = std::max(load_free_s_, now) + c_.latency_s + copy_s(n);
    return load_free_s_;
}

std::vector<std::uint64_t> CpuTier::lru_order() const {
    std::vector<std::uint64_t> out;
    for (std::int64_t s = head_; s >= 0; s = slab_[static_cast<std::size_t>(s)].next) out.push_back(slab_[static_cast<std::size_t>(s)].key);
    return out;
}

}  // namespace kvplan
