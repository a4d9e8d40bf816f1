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
    where_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(c.blocks, 1 << 20)));
}

// bytes / bandwidth, per direction (the host link moves one direction's copies one after another).
double CpuTier::copy_s(std::int64_t blocks) const {
    return static_cast<double>(checked_mul(blocks, c_.block_bytes)) / c_.link_bytes_per_s;
}

bool CpuTier::store(std::uint64_t key, double now) {
    const auto it = where_.find(key);
    if (it != where_.end()) {  // already offloaded: prepare_store skips it, touch makes it recent
        lru_.splice(lru_.end(), lru_, it->second);
        return false;
    }
    if (size() >= c_.blocks) {  // LRUOffloadingManager.prepare_store evicts the least recently used
        where_.erase(lru_.front().key);
        lru_.pop_front();
        ++evicted_;
    }
    store_free_s_ = std::max(store_free_s_, now) + copy_s(1);
    lru_.push_back(Entry{key, store_free_s_});
    where_[key] = std::prev(lru_.end());
    ++stored_;
    return true;
}

bool CpuTier::ready(std::uint64_t key, double now) const {
    const auto it = where_.find(key);
    return it != where_.end() && it->second->ready_s <= now;
}

double CpuTier::load(const std::vector<std::uint64_t>& keys, double now) {
    for (std::uint64_t k : keys) {
        const auto it = where_.find(k);
        if (it == where_.end()) throw std::logic_error("cpu tier: loading a block it does not hold");
        lru_.splice(lru_.end(), lru_, it->second);
    }
    const auto n = static_cast<std::int64_t>(keys.size());
    loaded_ += n;
    load_free_s_ = std::max(load_free_s_, now) + c_.latency_s + copy_s(n);
    return load_free_s_;
}

std::vector<std::uint64_t> CpuTier::lru_order() const {
    std::vector<std::uint64_t> out;
    for (const Entry& e : lru_) out.push_back(e.key);
    return out;
}

}  // namespace kvplan
