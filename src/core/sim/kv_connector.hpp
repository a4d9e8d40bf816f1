// The scheduler side of vLLM's KV connectors
// (vllm/distributed/kv_transfer/kv_connector/v1/base.py, KVConnectorBase_V1,
// its scheduler-side methods) as the V1 scheduler calls them
// (vllm/v1/core/sched/scheduler.py): a waiting request asks the connector
// how many tokens past its local prefix-cache hit it can load
// (get_num_new_matched_tokens); the scheduler allocates their blocks and
// tells the connector (update_state_after_alloc), and the request waits in
// WAITING_FOR_REMOTE_KVS until the load ends: the connector reports the
// loads done (the worker side's get_finished, whose finished_recving the
// scheduler collects in _update_from_kv_xfer_finished) and the scheduler
// puts those requests back in its waiting queue
// (_update_waiting_for_remote_kv); request_finished when a request leaves.
// The connector keeps the loads in flight (which requests, until when);
// what a loaded request does next is the scheduler's. Internal to
// src/core/sim.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/sim/cpu_tier.hpp"
#include "core/sim/kv_cache_manager.hpp"

namespace kvplan {

class KvConnector {
public:
    // A request waiting for its load (WAITING_FOR_REMOTE_KVS), until done_s.
    struct Load {
        std::size_t r = 0;
        double done_s = 0;
    };

    virtual ~KvConnector() = default;
    // How many tokens of request r past its `num_computed_tokens` local ones
    // the connector can load, asynchronously; `num_tokens` is the request's
    // length so far (prompt and output).
    virtual std::int64_t get_num_new_matched_tokens(std::size_t r, std::int64_t num_computed_tokens, std::int64_t num_tokens, double now) = 0;
    // The blocks for `num_external_tokens` tokens were allocated, from block
    // `first_block` of r on; the load is queued now and r waits for it.
    void update_state_after_alloc(std::size_t r, std::int64_t first_block, std::int64_t num_external_tokens, double now) {
        loads_.push_back(Load{r, start_load(r, first_block, num_external_tokens, now)});
    }
    // r finished (its blocks are freed next).
    virtual void request_finished(std::size_t /*r*/) {}

    // finished_recving: the requests whose loads ended by `now`, in the
    // order the loads started, handed over (into `out`, cleared first) and
    // forgotten.
    void take_finished_recving(double now, std::vector<std::size_t>& out);
    // When the first load in flight ends; infinity when none is.
    double next_recv_end_s() const;
    // The loads in flight, in start order (the log's waiting count, INV-1, INV-3).
    const std::vector<Load>& loads() const { return loads_; }
    bool receiving() const { return !loads_.empty(); }

protected:
    // Queues the load update_state_after_alloc describes; returns when it ends.
    virtual double start_load(std::size_t r, std::int64_t first_block, std::int64_t num_external_tokens, double now) = 0;

private:
    std::vector<Load> loads_;  // in start order
};

// KV offload to host memory: vLLM's OffloadingConnector with the CPU spec
// (kv_connector/v1/offloading/scheduler.py, OffloadingConnectorScheduler;
// engine_offload.cpp has the rules). One full-attention group.
class CpuOffloadConnector final : public KvConnector {
public:
    CpuOffloadConnector(const CpuTierConfig& c, std::int64_t block_size, KvCacheManager& kv, SimRun& run);
    std::int64_t get_num_new_matched_tokens(std::size_t r, std::int64_t num_computed_tokens, std::int64_t num_tokens, double now) override;
    // _get_reqs_to_store: r's blocks [from, to) became full on the GPU.
    void store(std::size_t r, std::int64_t from, std::int64_t to, double now);

private:
    double start_load(std::size_t r, std::int64_t first_block, std::int64_t num_external_tokens, double now) override;
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

private:
    double start_load(std::size_t r, std::int64_t, std::int64_t num_external_tokens, double now) override {
        return load_(r, num_external_tokens, now);
    }
    Load load_;
};

}  // namespace kvplan
