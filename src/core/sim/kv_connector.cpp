// The CPU-offload connector's scheduler side (kv_connector.hpp): vLLM's
// OffloadingConnectorScheduler
// (vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py)
// over the CPU tier (cpu_tier.hpp). The scheduler's part of the offload (the
// requests waiting for their loads) is in engine_offload.cpp.
#include "core/sim/kv_connector.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/checked.hpp"

namespace kvplan {

// The worker reports a load done once it is (get_finished's
// finished_recving); the scheduler collects them oldest first.
void KvConnector::take_finished_recving(double now, std::vector<std::size_t>& out) {
    out.clear();
    std::erase_if(loads_, [&](const Load& l) {
        if (l.done_s > now) return false;
        out.push_back(l.r);
        return true;
    });
}

double KvConnector::next_recv_end_s() const {
    double next = std::numeric_limits<double>::infinity();
    for (const Load& l : loads_) next = std::min(next, l.done_s);
    return next;
}

CpuOffloadConnector::CpuOffloadConnector(const CpuTierConfig& c, std::int64_t block_size, KvCacheManager& kv, SimRun& run)
    : tier_(c), block_size_(block_size), block_bytes_(c.block_bytes), kv_(kv), run_(run) {}

// The CPU tier is keyed as the GPU prefix cache is: a shared block by its
// chained hash, a request's own block by its own tag (found again only by
// the request itself, after a preemption).
std::uint64_t CpuOffloadConnector::key(std::size_t r, std::int64_t j) {
    return j < kv_.shared_blocks(r, 0) ? kv_.block_hash(r, 0, j) : kv_.private_tag(r, 0, j);
}

// OffloadingManager.lookup counts the blocks held from the first block past
// the GPU hit on, up to the first miss; a block whose store is still in
// flight is not a hit yet (its is_ready). The hit keeps the GPU's rule of at
// most all but the last token.
std::int64_t CpuOffloadConnector::get_num_new_matched_tokens(std::size_t r, std::int64_t num_computed_tokens, std::int64_t num_tokens, double now) {
    const std::int64_t bs = block_size_, first = num_computed_tokens / bs, max_len = num_tokens - 1;
    std::int64_t n = 0;
    while ((first + n + 1) * bs <= max_len && tier_.ready(key(r, first + n), now)) ++n;
    return n * bs;
}

// The load of the allocated blocks is queued on the host -> GPU direction
// of the link.
double CpuOffloadConnector::start_load(std::size_t r, std::int64_t first_block, std::int64_t num_external_tokens, double now) {
    const std::int64_t blocks = num_external_tokens / block_size_;
    std::vector<std::uint64_t> keys;
    for (std::int64_t i = 0; i < blocks; ++i) keys.push_back(key(r, first_block + i));
    run_.onload_bytes = checked_add(run_.onload_bytes, checked_mul(blocks, block_bytes_));
    return tier_.load(keys, now);
}

// Every newly full block is copied GPU -> host when its KV is computed;
// prepare_store skips those the tier holds already.
void CpuOffloadConnector::store(std::size_t r, std::int64_t from, std::int64_t to, double now) {
    for (std::int64_t j = from; j < to; ++j)
        if (tier_.store(key(r, j), now)) run_.offload_bytes = checked_add(run_.offload_bytes, block_bytes_);
}

}  // namespace kvplan
