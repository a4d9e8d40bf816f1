// VllmEngine's KV offload to host memory (scheduler.hpp, cpu_tier.hpp;
// the connector's own hooks in kv_connector.cpp), the scheduler side of
// vLLM's OffloadingConnector
// (vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py,
// OffloadingConnectorScheduler) as the V1 scheduler drives it
// (vllm/v1/core/sched/scheduler.py, the WAITING_FOR_REMOTE_KVS state):
//   - every block that becomes full on the GPU is copied to the CPU tier at
//     once (_get_reqs_to_store), not when the GPU evicts it;
//   - a waiting request whose prompt continues past its GPU prefix hit
//     with blocks the CPU tier holds (get_num_new_matched_tokens) gets GPU
//     blocks for the hit and for them, and waits while they load; it takes
//     no token budget and is not running meanwhile;
//   - once loaded, the blocks enter the GPU prefix cache and the request
//     goes back to the head of the waiting queue, where they are a GPU hit.
#include <algorithm>
#include <limits>

#include "core/checked.hpp"
#include "core/sim/block_pool.hpp"
#include "core/sim/vllm_engine_impl.hpp"

namespace kvplan {

// The scheduler allocates the GPU hit and the blocks to load
// (allocate_slots with num_external_computed_tokens), or stops the
// admission when the pool cannot give them; the load is queued on the
// host -> GPU direction of the link.
bool VllmEngine::Impl::start_load(std::size_t r, KvCacheManager::Hits& hits, std::int64_t blocks) {
    std::vector<std::int64_t>& hit = hits.blocks[0];
    std::int64_t need = blocks;
    for (std::int64_t b : hit)
        if (b >= 0 && kv_cache_.pool().is_free(b)) ++need;
    if (need > kv_cache_.pool().free_count()) return false;
    kv_cache_.forget_hit(r);
    GroupBlocks& k = kv_cache_.kv(r, 0);
    k.blocks = std::move(hit);
    for (std::int64_t b : k.blocks) kv_cache_.pool().touch(b);
    const auto from = static_cast<std::int64_t>(k.blocks.size());
    k.skipped = 0;
    k.hashed = from;
    for (std::int64_t i = 0; i < blocks; ++i) k.blocks.push_back(kv_cache_.pool().allocate());
    kv_cache_.note_peak();
    live_[r].cpu_loaded = checked_mul(blocks, c_.block_size);
    offload_->update_state_after_alloc(r, from, live_[r].cpu_loaded, t_);
    waiting_.pop_front();
    return true;
}

// _update_waiting_for_remote_kv: a finished load's blocks are cached
// (cache_blocks) and the request waits again at the head of the queue,
// oldest load first. Its blocks are handed back and found again at once by
// its admission, which follows in the same pass.
void VllmEngine::Impl::finish_loads() {
    offload_->take_finished_recving(t_, recved_);
    for (auto it = recved_.rbegin(); it != recved_.rend(); ++it) {
        const std::size_t r = *it;
        GroupBlocks& k = kv_cache_.kv(r, 0);
        for (std::int64_t j = k.hashed; j < static_cast<std::int64_t>(k.blocks.size()); ++j) kv_cache_.cache_block(r, 0, j);
        kv_cache_.free(r);
        waiting_.push_front(r);
    }
}

}  // namespace kvplan
