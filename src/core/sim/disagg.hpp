// Disaggregated prefill/decode (kvplan simulate --prefill-replicas P
// --decode-replicas D): vLLM's P/D flow with its NixlConnector
// (vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py; the
// proxy tests/v1/kv_connector/nixl_integration/toy_proxy_server.py,
// send_request_to_service):
//   1. the proxy sends the request to a prefill instance with max_tokens=1
//      and kv_transfer_params do_remote_decode: the prefill instance runs
//      its own scheduler (token budget, chunking) and finishes the request
//      when it samples that one token;
//   2. the proxy then sends the original request to a decode instance with
//      do_remote_prefill. Its scheduler admits it like any waiting request,
//      but get_num_new_matched_tokens reports the whole prompt as loadable
//      (count = len(prompt_token_ids) - num_computed_tokens, load async), so
//      allocate_slots takes the blocks for the prompt and the request waits
//      in WAITING_FOR_REMOTE_KVS, holding no token budget and no running
//      slot, while the worker pulls the blocks; a decode instance short of
//      blocks admits nobody (FCFS stops there);
//   3. when the pull is done, Scheduler._update_waiting_for_remote_kv sets
//      num_computed_tokens = min(blocks x block_size, num_tokens) and, since
//      that is the whole prompt, one less: the last prompt token is computed
//      again on the decode side, and that step samples the first token.
// The prefill instance frees its blocks when the request finishes
// (request_finished then returns delay_free_blocks: vLLM holds them until
// the decode side has read them, or VLLM_NIXL_ABORT_REQUEST_TIMEOUT, 480 s;
// that hold is not modelled, docs/simulate.md).
//
// Transfer of request r: bytes = prompt tokens x KV bytes per token per rank
// of the decode side's layout (every TP rank pulls its own heads, in
// parallel), time = latency + bytes / link bandwidth per direction. One
// decode engine's pulls share its link (a DP group's ranks each have their
// own GPUs and NICs): each waits for the last one's bytes to be on the
// wire (FIFO).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model_spec.hpp"
#include "core/sim/cluster.hpp"
#include "core/sim/dp_group.hpp"
#include "core/sim/scheduler.hpp"

namespace kvplan {

struct KvLink {
    double bytes_per_s = 0;  // per direction, per GPU (NVLink) or per GPU NIC (InfiniBand, RoCE)
    double latency_s = 0;    // per transfer
};

// The links --kv-link names (docs/simulate.md, "Disaggregated prefill/decode"):
//   nvlink  both pools in one NVLink domain: the GPU's NVLink bandwidth per
//           direction (models/gpus.json); latency 10 us, an assumption;
//   ib-ndr  InfiniBand NDR, 400 Gb/s per GPU NIC = 50 GB/s;
//   ib-xdr  InfiniBand XDR, 800 Gb/s per GPU NIC = 100 GB/s;
//   roce    400G RoCE v2 as NIXL measured it: nixlbench's UCX backend,
//           341 Gb/s = 42.6 GB/s (ai-dynamo/nixl PR #1647);
//   InfiniBand and RoCE: latency 25 us, an assumption (an RDMA read and the
//   completion notice).
enum class KvLinkKind { Nvlink, IbNdr, IbXdr, Roce };
inline constexpr double kNvlinkLatencyS = 10e-6;
inline constexpr double kRdmaLatencyS = 25e-6;
KvLink named_kv_link(KvLinkKind kind, std::int64_t nvlink_bytes_per_s);

struct DisaggConfig {
    std::int64_t prefill_replicas = 1;   // 1 .. 1024
    std::int64_t decode_replicas = 1;    // 1 .. 1024
    Router router = Router::RoundRobin;  // both sides
    KvLink link;
    std::int64_t kv_bytes_per_token_per_rank = 0;  // the decode side's layout (kv_transfer_bytes_per_token)
    // Layer by layer: the transfer runs beside the prefill's last chunk, and
    // only the last of `layers` layers' share of the bytes is exposed.
    bool layerwise = false;
    std::int64_t layers = 1;
};

// KV bytes one token costs on one of `tp` ranks: every layer that caches
// per token (full, sliding, chunked, MLA), as `size` computes it.
std::int64_t kv_transfer_bytes_per_token(const ModelSpec& spec, std::int64_t tp, Dtype kv_dtype);

// The exposed time of pulling `tokens` tokens' KV over the link.
double kv_transfer_s(std::int64_t tokens, const DisaggConfig& k);

// One request's way through the pools; -1 where it did not get there.
struct DisaggTimes {
    double prefill_end_s = -1;     // the prefill instance sampled its one token
    double transfer_start_s = -1;  // the decode instance had its blocks
    double transfer_end_s = -1;    // its KV was loaded
};

// How one pool's replicas step: one engine each (dp 1: `step`, and `decode`
// for decode-run jumps), or a DP group of `dp` engine cores in lockstep
// whose waves `wave` prices (dp_group.hpp; vLLM --data-parallel-size with
// expert parallelism, as wide-EP P/D deployments run both pools). The
// pricers must outlive the run.
struct PoolPricing {
    std::int64_t dp = 1;  // 1 .. 1024
    StepPricer step;
    DecodePricer decode;
    DpStepPricer wave;
};

struct DisaggRun {
    // Requests merged (arrival, prefill admission as scheduled_s, first
    // token and finish from the decode side, preemptions of both), ITL of
    // the decode side, steps and pools of both; `replicas` prefill then
    // decode (a DP replica's steps are its waves); with a DP pool,
    // `dp_ranks` has every engine core of both pools, prefill first (a
    // replica of one engine counting as one), each its own KV pool.
    SimRun run;
    std::vector<ReplicaStats> prefill, decode;
    std::vector<DisaggTimes> times;  // in workload order
    std::vector<double> transfer_s;  // every transfer's exposed time (end - start), in workload order
};

// Open loop only (Error(Usage) for a closed loop). `check_invariants` as simulate().
DisaggRun simulate_disagg(const Workload& w, const SchedulerConfig& prefill, const SchedulerConfig& decode, const DisaggConfig& k,
                          const PoolPricing& prefill_pricing, const PoolPricing& decode_pricing, bool check_invariants = false);
// Both pools of single engines.
DisaggRun simulate_disagg(const Workload& w, const SchedulerConfig& prefill, const SchedulerConfig& decode, const DisaggConfig& k,
                          const StepPricer& prefill_price, const DecodePricer& prefill_decode, const StepPricer& decode_price,
                          const DecodePricer& decode_decode, bool check_invariants = false);

}  // namespace kvplan
