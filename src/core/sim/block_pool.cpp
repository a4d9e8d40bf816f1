#include "core/sim/block_pool.hpp"

namespace kvplan {

BlockPool::BlockPool(std::int64_t blocks)
    : ref_(static_cast<std::size_t>(blocks), 0), prev_(static_cast<std::size_t>(blocks), -1),
      next_(static_cast<std::size_t>(blocks), -1), hash_(static_cast<std::size_t>(blocks)) {
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
        by_hash_.erase(*h);
        h.reset();
    }
    ref_[static_cast<std::size_t>(b)] = 1;
    return b;
}

void BlockPool::set_hash(std::int64_t block, std::uint64_t hash) {
    // A second block with content already cached stays uncached (vLLM keeps the first).
    if (by_hash_.emplace(hash, block).second) hash_[static_cast<std::size_t>(block)] = hash;
}

void BlockPool::release(std::int64_t block) {
    if (--ref_[static_cast<std::size_t>(block)] == 0) push_tail(block);
}

bool BlockPool::consistent() const {
    std::int64_t in_queue = 0;
    for (std::int64_t b = head_; b >= 0; b = next_[static_cast<std::size_t>(b)]) {
        if (ref_[static_cast<std::size_t>(b)] != 0) return false;
        ++in_queue;
    }
    std::int64_t referenced = 0;
    for (std::int64_t r : ref_) {
        if (r < 0) return false;
        if (r > 0) ++referenced;
    }
    return in_queue == free_count_ && in_queue + referenced == total();
}

}  // namespace kvplan
