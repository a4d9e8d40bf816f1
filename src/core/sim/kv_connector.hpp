// The scheduler side of vLLM's KV connectors
// (vllm/distributed/kv_transfer/kv_connector/v1/base.py, KVConnectorBase_V1,
// its scheduler-side methods) as the V1 scheduler calls them
// (vllm/v1/core/sched/scheduler.py): a waiting request asks the connector
// how many tokens past its local prefix-cache hit it can load
// (get_num_new_matched_tokens); the scheduler allocates their blocks and
// tells the connector (update_state_after_alloc), and the request waits in
// WAITING_FOR_REMOTE_KVS until the load ends; request_finished when it
// leaves. The waiting itself (which requests wait, until when) is the
// scheduler's, as in vLLM. Internal to src/core/sim.
#pragma once

#include <cstdint>
#include <functional>

#include "core/sim/cpu_tier.hpp"
#include "core/sim/kv_cache_manager.hpp"

namespace kvplan {

class KvConnector {
public:
    virtual ~KvConnector() = default;
    // How many tokens of request r past its `num_computed_tokens` local ones
    // the connector can load, asynchronously; `num_tokens` is the request's
    // length so far (prompt and output).
    virtual std::int64_t get_num_new_matched_tokens(std::size_t r, std::int64_t num_computed_tokens, std::int64_t num_tokens, double now) = 0;
    // The blocks for `num_external_tokens` tokens were allocated, from block
    // `first_block` of r on; the load is queued now. Returns when it ends.
    virtual double update_state_after_alloc(std::size_t r, std::int64_t first_block, std::int64_t num_external_tokens, double now) = 0;
    // r finished (its blocks are freed next).
    virtual void request_finished(std::size_t /*r*/) {}
};

// KV offload to host memory: vLLM's OffloadingConnector with the CPU spec
// (kv_connector/v1/offloading/scheduler.py, OffloadingConnectorScheduler;
// engine_offload.cpp has the rules). One full-attention group.
class CpuOffloadConnector final : public KvConnector {
public:
    CpuOffloadConnector(const CpuTierConfig& c, std::int64_t block_size, KvCacheManager& kv, SimRun& run);
    std::int64_t get_num_new_matched_tokens(std::size_t r, std::int64_t num_computed_tokens, std::int64_t num_tokens, double now) override;
    double update_state_after_alloc(std::size_t r, std::int64_t first_block, std::int64_t num_external_tokens, double now) override;
    // _get_reqs_to_store: r's blocks [from, to) became full on the GPU.
    void store(std::size_t r, std::int64_t from, std::int64_t to, double now);

private:
    std::uint64_t key(std::size_t r, std::int64_t j);

    CpuTier tier_;
    std::int64_t block_size_;
    std::int64_t block_bytes_;
    KvCacheManager& kv_;
    SimRun& run_;  // offload_bytes, onload_bytes
};

// Disaggregated decode: the decode side of vLLM's NixlConnector
// (kv_connector/v1/nixl_connector.py, NixlConnectorScheduler; disagg.cpp):
// a request's whole prompt is computed by a prefill instance and pulled;
// `load(r, tokens, start_s)` gives when the pull ends.
class RemotePrefillConnector final : public KvConnector {
public:
    using Load = std::function<double(std::size_t r, std::int64_t tokens, double start_s)>;
    explicit RemotePrefillConnector(Load load) : load_(std::move(load)) {}
    // len(prompt_token_ids) - num_computed_tokens: the whole prompt.
    std::int64_t get_num_new_matched_tokens(std::size_t, std::int64_t num_computed_tokens, std::int64_t num_tokens, double) override {
        return num_tokens - num_computed_tokens;
    }
    double update_state_after_alloc(std::size_t r, std::int64_t, std::int64_t num_external_tokens, double now) override {
        return load_(r, num_external_tokens, now);
    }

private:
    Load load_;
};

}  // namespace kvplan
