// libFuzzer target: the trace path `kvplan simulate --trace FILE` takes.
// Bytes -> trace (io/trace_reader, every format, auto-detected, vllm bench
// serve's JSON document included) -> Workload (an open or a closed loop)
// -> the vLLM or SGLang scheduler over a small pool with a constant step, invariants
// checked after every step, and vLLM's decode-run jump against stepping,
// vLLM's pipeline, DP groups, KV offload and disaggregated pools (each with
// single engines and with DP groups), and SGLang's
// replicas and DP attention groups (vLLM's also speculative) -> metrics. The reader must refuse every bad
// line with a kvplan::Error; the scheduler must complete or reject every
// request it is given. Anything else (a crash, a sanitizer report, a
// logic_error from the invariants, a hang past -timeout) is a bug.
// Build and run: `make fuzz`.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/sim/cluster.hpp"
#include "core/sim/disagg.hpp"
#include "core/sim/dp_group.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"
#include "core/sim/sglang_scheduler.hpp"
#include "io/trace_reader.hpp"

using namespace kvplan;

namespace {

// A lockstep wave priced as its slowest rank's step under `step` (an idle rank costs nothing).
DpStepPricer slowest_rank(const StepPricer& step) {
    return [&step](const std::vector<const std::vector<SeqWork>*>& ranks) {
        double most = 0;
        for (const auto* r : ranks)
            if (!r->empty()) most = std::max(most, step(*r));
        return most;
    };
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) return -1;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    Workload w;
    try {
        std::istringstream in(bytes);
        w = read_trace_stream(in, "fuzz.trace", TraceOptions{"auto", 1.0, 200});
    } catch (const Error&) {
        return 0;
    }
    // Keep one execution in milliseconds: the simulated work grows with the
    // tokens (a request of 10^9 output tokens is valid, and slow).
    std::int64_t tokens = 0;
    for (const SimRequest& r : w.requests) tokens += r.input_tokens / 64 + r.output_tokens;
    if (tokens > 200'000) return -1;
    const StepPricer price = [](const std::vector<SeqWork>& s) { return 0.01 + 1e-6 * static_cast<double>(s.size()); };
    SimRun run;
    if (size % 2 == 0) {
        SchedulerConfig c;                                              // vLLM's scheduler
        c.num_gpu_blocks = 64 + static_cast<std::int64_t>(size % 512);  // small pools preempt and reject
        c.block_size = 16;
        c.max_num_seqs = 1 + static_cast<std::int64_t>(size % 64);
        c.max_num_batched_tokens = 256 + static_cast<std::int64_t>(size % 4096);
        c.prefix_caching = size % 3 != 0;
        // Half the vLLM runs on two KV-cache groups (full + a sliding window):
        // windows free blocks and the hybrid prefix-hit rule applies.
        if (size % 4 == 2)
            c.groups = {KvGroup{KvGroupKind::Full, 0, 16}, KvGroup{KvGroupKind::Sliding, 2 + static_cast<std::int64_t>(size % 300), 16}};
        // Priced so that a decode step's price depends on its context, as
        // the roofline's does; the decode-run jump must match stepping.
        // Integer sums first, one formula: the jump's aggregate is then exact.
        const StepPricer by_context = [](const std::vector<SeqWork>& s) {
            std::int64_t tokens = 0, cached = 0;
            for (const SeqWork& q : s) tokens += q.new_tokens, cached += q.cached;
            return 0.01 + 1e-6 * static_cast<double>(tokens) + 1e-9 * static_cast<double>(cached);
        };
        const DecodePricer decode = [](std::int64_t batch, std::int64_t context_sum) -> std::optional<double> {
            return 0.01 + 1e-6 * static_cast<double>(batch) + 1e-9 * static_cast<double>(context_sum);
        };
        run = simulate(w, c, by_context, decode, true);
        c.jump_decode_runs = false;
        const SimRun stepped = simulate(w, c, by_context, true);
        // Differential check: the jump may only skip work, never change the run.
        for (std::size_t i = 0; i < run.requests.size(); ++i) {
            const RequestRecord &a = run.requests[i], &b = stepped.requests[i];
            if (a.first_token_s != b.first_token_s || a.finish_s != b.finish_s || a.preemptions != b.preemptions || a.rejected != b.rejected)
                __builtin_trap();
        }
        if (run.preemptions != stepped.preemptions || run.end_s != stepped.end_s) __builtin_trap();
        // The same pool as a pipeline of 2 to 4 stages on 1 to 3 replicas:
        // every request completed or rejected, the books balanced after
        // every batch (check_invariants).
        const StagePricers stages(static_cast<std::size_t>(2 + size % 3), by_context);
        const SimRun piped =
            simulate_cluster(w, c, ClusterConfig{1 + static_cast<std::int64_t>(size % 3), Router::LeastLoaded}, by_context, decode, true, stages);
        for (const RequestRecord& r : piped.requests)
            if (!r.rejected && r.finish_s < 0) __builtin_trap();
        // Data-parallel ranks in lockstep (2 to 4 a group, 1 or 2 groups):
        // every wave priced as its slowest rank, every request completed or rejected.
        const DpStepPricer slowest = slowest_rank(by_context);
        const SimRun dp = simulate_dp_cluster(w, c, 2 + static_cast<std::int64_t>(size % 3),
                                              ClusterConfig{1 + static_cast<std::int64_t>(size % 2), Router::RoundRobin}, slowest, true);
        for (const RequestRecord& r : dp.requests)
            if (!r.rejected && r.finish_s < 0) __builtin_trap();
        // The same DP group verifying 1 to 3 drafts a step (simulate --dp
        // --spec-method): every rank's drafts and rejections in lockstep.
        if (c.groups.empty()) {
            SchedulerConfig sc = c;
            sc.spec.k = 1 + static_cast<std::int64_t>(size % 3);
            sc.spec.rates.assign(static_cast<std::size_t>(sc.spec.k), size % 7 == 0 ? 1.0 : 0.6);
            sc.spec.draft_s = [](std::int64_t batch, std::int64_t context_sum) {
                return 1e-4 * static_cast<double>(batch) + 1e-9 * static_cast<double>(context_sum);
            };
            sc.spec.seed = size;
            const SimRun spec_dp =
                simulate_dp_cluster(w, sc, 2 + static_cast<std::int64_t>(size % 2), ClusterConfig{1, Router::LeastLoaded}, slowest, true);
            for (const RequestRecord& r : spec_dp.requests)
                if (!r.rejected && r.finish_s < 0) __builtin_trap();
        }
        // KV offload to a CPU tier of 16 to 271 blocks over a slow or a fast
        // host link (one full-attention group with prefix caching, as the
        // command allows): loads and stores interleave with preemptions.
        if (c.groups.empty() && c.prefix_caching) {
            SchedulerConfig o = c;
            o.cpu_tier = CpuTierConfig{16 + static_cast<std::int64_t>(size % 256), 16'000, size % 5 == 0 ? 1e8 : 1e10, 0};
            const SimRun off = simulate(w, o, by_context, decode, true);
            for (const RequestRecord& r : off.requests)
                if (!r.rejected && r.finish_s < 0) __builtin_trap();
            // The same tier on every rank of a DP group: a rank waiting for
            // its load idles through the others' waves, or the group waits.
            const SimRun dp_off =
                simulate_dp_cluster(w, o, 2 + static_cast<std::int64_t>(size % 3), ClusterConfig{1, Router::LeastLoaded}, slowest, true);
            for (const RequestRecord& r : dp_off.requests)
                if (!r.rejected && r.finish_s < 0) __builtin_trap();
        }
        // The same pool as disaggregated prefill and decode pools joined by a
        // slow or a fast link, the decode side's runs jumped; a closed loop (a
        // vllm bench serve result's max_concurrency) is refused there, as by
        // `simulate --prefill-replicas`, and not tried.
        if (w.concurrency == 0) {
            DisaggConfig k;
            k.prefill_replicas = 1 + static_cast<std::int64_t>(size % 2);
            k.decode_replicas = 1 + static_cast<std::int64_t>(size % 3);
            k.router = size % 8 == 0 ? Router::LeastLoaded : Router::RoundRobin;
            k.link = KvLink{size % 3 == 0 ? 1e8 : 1e10, 1e-4};
            k.kv_bytes_per_token_per_rank = 1000;
            k.layerwise = size % 5 == 1;
            k.layers = 32;
            const DisaggRun pd = simulate_disagg(w, c, c, k, by_context, decode, by_context, decode, true);
            for (const RequestRecord& r : pd.run.requests)
                if (!r.rejected && r.finish_s < 0) __builtin_trap();
            // The same pools with DP groups: the decode side's ranks pulling over
            // their own links, the prefill side's one engine or a group of 2.
            const DisaggRun pd_dp = simulate_disagg(w, c, c, k, PoolPricing{1 + static_cast<std::int64_t>(size % 2), by_context, decode, slowest},
                                                    PoolPricing{2 + static_cast<std::int64_t>(size % 3), by_context, decode, slowest}, true);
            for (const RequestRecord& r : pd_dp.run.requests)
                if (!r.rejected && r.finish_s < 0) __builtin_trap();
        }
    } else {
        SglangConfig c;  // SGLang's, over a token pool
        c.max_total_tokens = 1024 + static_cast<std::int64_t>(size % 8192);
        c.max_running_requests = 1 + static_cast<std::int64_t>(size % 64);
        c.chunked_prefill_size = size % 5 == 0 ? 0 : 256 + static_cast<std::int64_t>(size % 4096);
        c.radix_cache = size % 3 != 0;
        c.policy = size % 7 == 0 ? SglangPolicy::Lpm : SglangPolicy::Fcfs;
        run = simulate_sglang(w, c, price, true);
        // Two replicas behind a router must serve the same requests.
        const SimRun two = simulate_sglang_cluster(w, c, ClusterConfig{2, size % 4 == 1 ? Router::LeastLoaded : Router::RoundRobin}, price, true);
        for (std::size_t i = 0; i < two.requests.size(); ++i)
            if (two.requests[i].rejected != run.requests[i].rejected) __builtin_trap();
        // DP attention: 2 to 4 schedulers in lockstep, dealt round robin (1 or
        // 2 groups), every wave priced as its slowest rank.
        const DpStepPricer slowest = slowest_rank(price);
        const SimRun dp = simulate_sglang_dp_cluster(w, c, 2 + static_cast<std::int64_t>(size % 3),
                                                     ClusterConfig{1 + static_cast<std::int64_t>(size % 2), Router::LeastLoaded}, slowest, true);
        for (std::size_t i = 0; i < dp.requests.size(); ++i)
            if (dp.requests[i].rejected != run.requests[i].rejected || (!dp.requests[i].rejected && dp.requests[i].finish_s < 0)) __builtin_trap();
    }
    (void)summarise(run, Slo{2.0, 0.05, 30.0});
    return 0;
}
