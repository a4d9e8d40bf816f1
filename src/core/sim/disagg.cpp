#include "core/sim/disagg.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/sim/block_pool.hpp"
#include "core/sim/vllm_engine_impl.hpp"

namespace kvplan {

// ---- The decode side of one VllmEngine (scheduler.hpp, set_remote_prefill) ----

void VllmEngine::Impl::set_remote_prefill(RemoteLoad load) {
    // One kind of pending load per engine (next_event_s, scheduler.cpp); the
    // CLI refuses --cpu-offload with P/D pools too.
    if (offload_) usage_error("--cpu-offload: KV offload in disaggregated pools is not simulated");
    auto remote = std::make_unique<RemotePrefillConnector>(std::move(load));
    remote_ = remote.get();
    connector_ = std::move(remote);
    remote_state_.assign(w_.requests.size(), 0);
}

// A waiting request whose KV a prefill instance holds. First admission:
// NixlConnectorScheduler.get_num_new_matched_tokens reports the whole prompt
// (len(prompt_token_ids) - num_computed_tokens, loaded asynchronously), and
// Scheduler.schedule() calls allocate_slots for it with
// num_external_computed_tokens = that count and no new tokens: the blocks for
// the prompt, or no admission (the FCFS loop stops, as for any request
// allocate_slots refuses). The request then waits in WAITING_FOR_REMOTE_KVS,
// outside the running list and the token budget. Once loaded
// (collect_loaded), its last prompt token is scheduled like a decode.
bool VllmEngine::Impl::admit_remote(std::size_t r, StepPlan& p, std::int64_t& budget) {
    if (remote_state_[r] == 2) {
        if (budget <= 0 || !kv_cache_.allocate_slots(r, 1)) return false;
        remote_state_[r] = 3;  // from here on a local request (a preemption recomputes it here)
        waiting_.pop_front();
        running_.push_back(r);
        p.seqs.push_back({r, 1});
        budget -= 1;
        return true;
    }
    // The connector reports the whole prompt (get_num_new_matched_tokens).
    const std::int64_t prompt = remote_->get_num_new_matched_tokens(r, 0, w_.requests[r].input_tokens, t_);
    // Every KV-cache group takes the whole prompt's blocks for the pull (a
    // window's blocks that fall out of it are not nulled first), so a prompt
    // needing more than the whole pool could never be admitted: it is
    // rejected, as admit() rejects a request the pool cannot hold.
    std::int64_t need = 0;
    for (std::size_t g = 0; g < kv_cache_.groups().size(); ++g) need = checked_add(need, kv_cache_.blocks_for(g, prompt));
    if (need > kv_cache_.pool().total()) {
        records_[r].rejected = true;
        waiting_.pop_front();
        ++done_;
        return true;
    }
    if (!kv_cache_.allocate_slots(r, prompt)) return false;  // live_[r].computed is 0: ceil(prompt / block) blocks per group
    records_[r].scheduled_s = t_;
    remote_state_[r] = 1;
    waiting_.pop_front();
    remote_->update_state_after_alloc(r, 0, prompt, t_);
    return true;
}

// Nothing runs and the queue's head cannot get its blocks, while requests
// behind it hold theirs with their pulled KV loaded: vLLM's FCFS loop stops
// at the head (scheduler.py: allocate_slots returns None, break), so the
// engine would stall for good, the free blocks never enough for the head.
// Or the head, a request preempted here, gets its first chunk but needs more
// blocks than are free to finish: it would preempt itself every few steps,
// recomputing forever (head_starved). The simulator lets those loaded
// requests start instead (each needs at most one more block); as they
// finish, their blocks go to the head (docs/simulate.md, "Disaggregated
// prefill/decode").
void VllmEngine::Impl::admit_loaded_behind_head(StepPlan& p, std::int64_t& budget) {
    for (auto it = std::next(waiting_.begin()); it != waiting_.end() && budget > 0 && static_cast<std::int64_t>(running_.size()) < c_.max_num_seqs;) {
        const std::size_t r = *it;
        if (remote_state_[r] != 2) {
            ++it;
            continue;
        }
        if (!kv_cache_.allocate_slots(r, 1)) return;
        remote_state_[r] = 3;
        it = waiting_.erase(it);
        running_.push_back(r);
        p.seqs.push_back({r, 1});
        budget -= 1;
    }
}

// The head is a request preempted on this instance whose whole length
// (prompt and every output token but the last) needs more blocks than are
// free: with nothing running, only the loaded requests behind it hold the rest.
bool VllmEngine::Impl::head_starved() const {
    const std::size_t r = waiting_.front();
    if (remote_state_[r] != 3) return false;
    return kv_cache_.worst_blocks(w_.requests[r].input_tokens + w_.requests[r].output_tokens - 1) > kv_cache_.pool().free_count();
}

// Scheduler._update_waiting_for_remote_kv: when the pull is done,
// num_computed_tokens = min(blocks x block_size, num_tokens), one less when
// that is every token, so the decode side computes the last prompt token
// again (and samples the first output token with it); the loaded blocks are
// cached. The requests stay at the head of the waiting queue, in admission
// order (schedule() prepends its skipped_waiting_requests to the queue).
void VllmEngine::Impl::collect_loaded() {
    if (!remote_->receiving()) return;
    remote_->take_finished_recving(t_, recved_);
    for (auto it = recved_.rbegin(); it != recved_.rend(); ++it) {
        const std::size_t r = *it;
        live_[r].computed = w_.requests[r].input_tokens - 1;
        if (c_.prefix_caching) register_full_blocks(r);
        remote_state_[r] = 2;
        waiting_.push_front(r);
    }
}

// ---- The transfer ----

KvLink named_kv_link(KvLinkKind kind, std::int64_t nvlink_bytes_per_s) {
    switch (kind) {
        case KvLinkKind::Nvlink: return KvLink{static_cast<double>(nvlink_bytes_per_s), kNvlinkLatencyS};
        case KvLinkKind::IbNdr: return KvLink{400e9 / 8, kRdmaLatencyS};  // 400 Gb/s
        case KvLinkKind::IbXdr: return KvLink{800e9 / 8, kRdmaLatencyS};  // 800 Gb/s
        case KvLinkKind::Roce: return KvLink{42.6e9, kRdmaLatencyS};      // nixlbench, ai-dynamo/nixl PR #1647
    }
    return KvLink{};
}

std::int64_t kv_transfer_bytes_per_token(const ModelSpec& spec, std::int64_t tp, Dtype kv_dtype) {
    std::int64_t bytes = 0;
    for (const LayerSpec& layer : spec.layers)
        if (holds_per_token(layer.kind)) bytes = checked_add(bytes, layer_bytes_per_token_per_gpu(layer, tp, kv_dtype));
    return bytes;
}

namespace {

// Seconds the bytes are on the wire: each rank pulls its own share in
// parallel, so one rank's bytes over its link; layer by layer, only the last
// layer's share comes after the prefill.
double wire_s(std::int64_t tokens, const DisaggConfig& k) {
    const double bytes = static_cast<double>(checked_mul(tokens, k.kv_bytes_per_token_per_rank));
    const double s = bytes / k.link.bytes_per_s;
    return k.layerwise ? s / static_cast<double>(std::max<std::int64_t>(1, k.layers)) : s;
}

void check_disagg(const Workload& w, const DisaggConfig& k) {
    if (k.prefill_replicas < 1 || k.prefill_replicas > 1024)
        usage_error("--prefill-replicas " + std::to_string(k.prefill_replicas) + ": expected 1 to 1024");
    if (k.decode_replicas < 1 || k.decode_replicas > 1024)
        usage_error("--decode-replicas " + std::to_string(k.decode_replicas) + ": expected 1 to 1024");
    if (!(k.link.bytes_per_s > 0) || !(k.link.latency_s >= 0)) usage_error("--kv-link: expected a positive bandwidth");
    if (k.kv_bytes_per_token_per_rank <= 0) usage_error("simulate: the model caches nothing per token to transfer");
    if (w.concurrency > 0) usage_error("--prefill-replicas: a closed loop (--concurrency) is not simulated with disaggregated pools; pass --rate");
    check_arrivals(w);
}

}  // namespace

double kv_transfer_s(std::int64_t tokens, const DisaggConfig& k) {
    return k.link.latency_s + wire_s(tokens, k);
}

// ---- The two pools ----

namespace {

// Routes the decode side's requests (in order of their prefills' return)
// to its replicas, one engine or one DP group each, and runs them to the
// end; returns how many each got.
template <class Replica>
std::vector<std::int64_t> run_decode_pool(std::vector<Replica>& replicas, const Workload& wd, Router router) {
    std::vector<std::int64_t> routed(replicas.size(), 0);
    for (std::size_t j = 0; j < wd.requests.size(); ++j) {
        const double t = wd.requests[j].arrival_s;
        std::size_t best = j % replicas.size();
        if (router == Router::LeastLoaded) {
            for (Replica& e : replicas) e.advance(t, false);  // every step that starts before t
            std::int64_t least = std::numeric_limits<std::int64_t>::max();
            for (std::size_t e = 0; e < replicas.size(); ++e)
                if (const std::int64_t n = replicas[e].outstanding_at(t); n < least) least = n, best = e;
        }
        ++routed[best];
        replicas[best].add(j);
    }
    for (Replica& e : replicas) e.advance(std::numeric_limits<double>::infinity(), false);
    return routed;
}

// A pool's replicas' totals into `run`, one ReplicaStats each into `stats`;
// `units` gets a DP replica's ranks, or the replica itself.
template <class Replica>
void take_pool(std::vector<Replica>& replicas, const std::vector<std::int64_t>& routed, SimRun& run, std::vector<ReplicaStats>& stats,
               std::vector<ReplicaStats>& units, std::vector<std::vector<TimePoint>>& series, std::vector<std::int64_t>& blocks) {
    for (std::size_t e = 0; e < replicas.size(); ++e) {
        SimRun d = replicas[e].take_totals();
        stats.push_back(ReplicaStats{routed[e], d.steps, d.preemptions, d.peak_blocks_used, d.total_blocks});
        if (d.dp_ranks.empty()) units.push_back(stats.back());
        else units.insert(units.end(), d.dp_ranks.begin(), d.dp_ranks.end());
        d.dp_ranks.clear();
        // The decode side admits no prompt of its own (a pull is not a first admission) and runs no CPU tier:
        // its token counts add nothing to the prefill side's.
        add_engine_totals(run, std::move(d), series, blocks);
    }
}

void check_pricing(const PoolPricing& p, const char* side) {
    if (p.dp < 1 || p.dp > 1024) usage_error(std::string("--") + side + "-dp " + std::to_string(p.dp) + ": expected 1 to 1024");
    if (p.dp > 1 ? !p.wave : !p.step) throw std::logic_error(std::string("simulate_disagg: the ") + side + " pool has no pricer");
}

}  // namespace

DisaggRun simulate_disagg(const Workload& w, const SchedulerConfig& prefill, const SchedulerConfig& decode, const DisaggConfig& k,
                          const StepPricer& prefill_price, const DecodePricer& prefill_decode, const StepPricer& decode_price,
                          const DecodePricer& decode_decode, bool check_invariants) {
    return simulate_disagg(w, prefill, decode, k, PoolPricing{1, prefill_price, prefill_decode, {}}, PoolPricing{1, decode_price, decode_decode, {}},
                           check_invariants);
}

DisaggRun simulate_disagg(const Workload& w, const SchedulerConfig& prefill, const SchedulerConfig& decode, const DisaggConfig& k,
                          const PoolPricing& pre_pricing, const PoolPricing& dec_pricing, bool check_invariants) {
    check_scheduler_config(prefill);
    check_scheduler_config(decode);
    check_disagg(w, k);
    check_pricing(pre_pricing, "prefill");
    check_pricing(dec_pricing, "decode");

    // 1. Prefill: every request with max_tokens=1, routed like a cluster's
    //    (each replica a DP group with dp > 1).
    Workload wp = w;
    for (SimRequest& r : wp.requests) r.output_tokens = 1;
    const ClusterConfig prefill_cluster{k.prefill_replicas, k.router};
    SimRun pre = pre_pricing.dp > 1 ? simulate_dp_cluster(wp, prefill, pre_pricing.dp, prefill_cluster, pre_pricing.wave, check_invariants)
                                    : simulate_cluster(wp, prefill, prefill_cluster, pre_pricing.step, pre_pricing.decode, check_invariants);

    // 2. Decode: each prefilled request arrives when its prefill returns.
    std::vector<std::size_t> order;  // decode index -> workload index
    for (std::size_t i = 0; i < pre.requests.size(); ++i)
        if (!pre.requests[i].rejected && pre.requests[i].finish_s >= 0) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return pre.requests[a].finish_s < pre.requests[b].finish_s; });
    Workload wd;
    for (std::size_t i : order) {
        wd.requests.push_back(w.requests[i]);
        wd.requests.back().arrival_s = pre.requests[i].finish_s;
    }
    RequestStates ds = request_states(wd);
    std::vector<DisaggTimes> xfer(wd.requests.size());
    // When each decode engine's link has sent its last bytes (a DP group's ranks each their own).
    const auto engines_per_replica = static_cast<std::size_t>(dec_pricing.dp);
    std::vector<double> link_free(static_cast<std::size_t>(k.decode_replicas) * engines_per_replica, 0.0);
    const auto pull = [&xfer, &link_free, &k](std::size_t link) {
        return [&xfer, &link_free, &k, link](std::size_t r, std::int64_t tokens, double start) {
            const double wire = wire_s(tokens, k);
            const double begin = std::max(start, link_free[link]);  // FIFO on the engine's link
            link_free[link] = begin + wire;
            xfer[r].transfer_start_s = start;
            xfer[r].transfer_end_s = begin + wire + k.link.latency_s;
            return xfer[r].transfer_end_s;
        };
    };
    DisaggRun out;
    SimRun& run = out.run;
    std::vector<std::vector<TimePoint>> series;
    std::vector<std::int64_t> blocks;
    std::vector<ReplicaStats> units = pre.dp_ranks.empty() ? pre.replicas : pre.dp_ranks;
    if (dec_pricing.dp > 1) {
        std::vector<DpGroup> groups;
        groups.reserve(static_cast<std::size_t>(k.decode_replicas));
        for (std::size_t d = 0; d < static_cast<std::size_t>(k.decode_replicas); ++d)
            groups.push_back(vllm_dp_group(wd, decode, dec_pricing.dp, dec_pricing.wave, check_invariants, ds,
                                           [&](VllmEngine& e, std::size_t rank) { e.set_remote_prefill(pull(d * engines_per_replica + rank)); }));
        take_pool(groups, run_decode_pool(groups, wd, k.router), run, out.decode, units, series, blocks);
    } else {
        std::vector<VllmEngine> engines;
        engines.reserve(static_cast<std::size_t>(k.decode_replicas));
        for (std::size_t d = 0; d < static_cast<std::size_t>(k.decode_replicas); ++d) {
            engines.emplace_back(wd, decode, dec_pricing.step, dec_pricing.decode, check_invariants, ds);
            engines.back().set_remote_prefill(pull(d));
        }
        take_pool(engines, run_decode_pool(engines, wd, k.router), run, out.decode, units, series, blocks);
    }
    if (pre_pricing.dp > 1 || dec_pricing.dp > 1) run.dp_ranks = std::move(units);

    // 3. Merge: the request as the client sees it, both pools' figures.
    out.prefill = pre.replicas;
    run.requests = pre.requests;
    for (std::size_t i = 0; i < run.requests.size(); ++i) {
        RequestRecord& q = run.requests[i];
        q.output_tokens = w.requests[i].output_tokens;
        q.first_token_s = q.finish_s = -1;  // the prefill's token is not the client's
    }
    out.times.resize(w.requests.size());
    for (std::size_t j = 0; j < order.size(); ++j) {
        const std::size_t i = order[j];
        const RequestRecord& d = ds.records[j];
        RequestRecord& q = run.requests[i];
        out.times[i].prefill_end_s = pre.requests[i].finish_s;
        out.times[i].transfer_start_s = xfer[j].transfer_start_s;
        out.times[i].transfer_end_s = xfer[j].transfer_end_s;
        q.first_token_s = d.first_token_s;
        q.finish_s = d.finish_s;
        q.preemptions += d.preemptions;
        q.rejected = d.rejected;
    }
    for (const DisaggTimes& t : out.times)
        if (t.transfer_end_s >= 0) out.transfer_s.push_back(t.transfer_end_s - t.transfer_start_s);
    // The decode side's totals are in `run` (take_pool); the prefill side's
    // join them (its offload and speculation counters are 0: both are refused
    // in disaggregated pools), its series first.
    add_engine_counters(run, pre);
    series.insert(series.begin(), std::move(pre.timeseries));
    blocks.insert(blocks.begin(), pre.total_blocks);
    run.timeseries = sum_series(series, blocks, run.total_blocks);
    run.replicas = out.prefill;
    run.replicas.insert(run.replicas.end(), out.decode.begin(), out.decode.end());
    return out;
}

}  // namespace kvplan
