// Disaggregated prefill/decode (src/core/sim/disagg.cpp): the KV transfer
// priced by hand, a lone request through a 1P:1D pool, a decode pool short
// of blocks, and the invariants of every request on a longer run.
#include "core/sim/disagg.hpp"

#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include "core/sim/metrics.hpp"
#include "core/sim/synthetic.hpp"
#include "core/speed/step_cost.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

// A step costs 5 ms plus 10 us per token computed in it (any batch).
const StepPricer linear = [](const std::vector<SeqWork>& w) {
    std::int64_t tokens = 0;
    for (const SeqWork& s : w) tokens += s.new_tokens;
    return 0.005 + 1e-5 * static_cast<double>(tokens);
};
const DecodePricer linear_decode = [](std::int64_t batch, std::int64_t) -> std::optional<double> {
    return 0.005 + 1e-5 * static_cast<double>(batch);
};

// A DP group's wave: its busiest rank's `linear` step (an idle rank's dummy batch costs nothing here).
const DpStepPricer slowest = [](const std::vector<const std::vector<SeqWork>*>& ranks) {
    double most = 0;
    for (const auto* r : ranks)
        if (!r->empty()) most = std::max(most, linear(*r));
    return most;
};

// 1,000 B per token per rank over 1 GB/s with 1 ms latency: 1 ms + 1 us per token.
DisaggConfig slow_link(std::int64_t p = 1, std::int64_t d = 1) {
    DisaggConfig k;
    k.prefill_replicas = p;
    k.decode_replicas = d;
    k.link = KvLink{1e9, 1e-3};
    k.kv_bytes_per_token_per_rank = 1000;
    return k;
}

}  // namespace

TEST_CASE("an 8K-token Llama-3.1-70B prompt's KV crosses NVLink and 400 Gb/s InfiniBand in the hand-computed time") {
    const ModelSpec m = preset("llama-3.1-70b");
    // bf16 KV: 80 layers x 8 KV heads x 128 head_dim x 2 (K,V) x 2 B = 327,680 B per token;
    // under TP 4 each rank holds 2 of the 8 heads: 81,920 B.
    CHECK(kv_transfer_bytes_per_token(m, 1, Dtype::Bf16) == 327'680);
    CHECK(kv_transfer_bytes_per_token(m, 4, Dtype::Bf16) == 81'920);
    DisaggConfig k;
    // 8,192 x 327,680 = 2,684,354,560 B on one rank; 8,192 x 81,920 = 671,088,640 B per rank at TP 4.
    const auto t = [&](KvLinkKind link, std::int64_t tp) {
        k.link = named_kv_link(link, gpu("h100-sxm").interconnect_bytes_per_s);
        k.kv_bytes_per_token_per_rank = kv_transfer_bytes_per_token(m, tp, Dtype::Bf16);
        return kv_transfer_s(8192, k);
    };
    // H100 NVLink 4: 450 GB/s per direction (gpus.json); 10 us latency.
    CHECK(t(KvLinkKind::Nvlink, 1) == Approx(10e-6 + 2'684'354'560 / 450e9).epsilon(1e-12));  // 5.975 ms
    CHECK(t(KvLinkKind::Nvlink, 4) == Approx(10e-6 + 671'088'640 / 450e9).epsilon(1e-12));    // 1.501 ms
    // InfiniBand NDR, 400 Gb/s = 50 GB/s per GPU NIC; 25 us latency.
    CHECK(t(KvLinkKind::IbNdr, 1) == Approx(25e-6 + 0.0536870912).epsilon(1e-12));  // 53.71 ms
    CHECK(t(KvLinkKind::IbNdr, 4) == Approx(25e-6 + 0.0134217728).epsilon(1e-12));  // 13.45 ms
    // XDR twice NDR; RoCE as nixlbench measured it, 42.6 GB/s.
    CHECK(t(KvLinkKind::IbXdr, 1) == Approx(25e-6 + 0.0268435456).epsilon(1e-12));
    CHECK(t(KvLinkKind::Roce, 1) == Approx(25e-6 + 2'684'354'560 / 42.6e9).epsilon(1e-12));
    // Layer by layer only the last of 80 layers' share follows the prefill.
    k.layerwise = true;
    k.layers = 80;
    CHECK(t(KvLinkKind::IbNdr, 1) == Approx(25e-6 + 0.0536870912 / 80).epsilon(1e-12));
}

TEST_CASE("a lone request through 1P:1D takes its prefill step, the transfer and its decode steps") {
    // By hand: the 700-token prompt is one prefill step, 5 + 700 x 0.01 = 12 ms,
    // sampling the prefill's one token (max_tokens=1). The transfer: 1 ms +
    // 700 x 1,000 B / 1 GB/s = 1.7 ms. The decode side computes the last
    // prompt token again (5.01 ms), which samples the first token: TTFT =
    // 12 + 1.7 + 5.01 = 18.71 ms. Then 39 decode steps of 5.01 ms: E2E =
    // 18.71 + 195.39 = 214.1 ms.
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    Workload w;
    w.requests.push_back(SimRequest{0.25, 700, 40, {}, 0});
    const DisaggRun run = simulate_disagg(w, c, c, slow_link(), linear, linear_decode, linear, linear_decode, true);
    const RequestRecord& r = run.run.requests[0];
    CHECK(run.times[0].prefill_end_s - r.arrival_s == Approx(0.012).epsilon(1e-9));
    CHECK(run.times[0].transfer_start_s == run.times[0].prefill_end_s);
    REQUIRE(run.transfer_s.size() == 1);
    CHECK(run.transfer_s[0] == Approx(0.0017).epsilon(1e-9));
    CHECK(r.first_token_s - r.arrival_s == Approx(0.01871).epsilon(1e-9));
    CHECK(r.finish_s - r.arrival_s == Approx(0.2141).epsilon(1e-9));
    CHECK(run.run.steps == 1 + 40);  // one prefill step; 40 on the decode side
    REQUIRE(run.prefill.size() == 1);
    REQUIRE(run.decode.size() == 1);
    CHECK(run.prefill[0].steps == 1);
    CHECK(run.decode[0].steps == 40);
    CHECK(run.prefill[0].peak_blocks_used == 44);  // ceil(700 / 16)
    CHECK(run.decode[0].peak_blocks_used == 47);   // ceil(739 / 16): the 40th output token's KV is never written
}

TEST_CASE("a lone request through 1P:1D on an H100 pair takes the roofline's steps plus the transfer") {
    const ModelSpec m = preset("llama-3.1-8b");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h100-sxm");
    const CostModel cm = make_cost_model(in);
    const StepPricer price = [&](const std::vector<SeqWork>& w) { return mixed_step(cm, w).total_s; };
    SchedulerConfig c;
    c.num_gpu_blocks = 10'000;
    c.max_num_batched_tokens = 2048;
    DisaggConfig k;
    k.link = named_kv_link(KvLinkKind::IbNdr, 0);
    k.kv_bytes_per_token_per_rank = kv_transfer_bytes_per_token(m, 1, Dtype::Bf16);  // 131,072 B
    Workload w;
    w.requests.push_back(SimRequest{0.5, 3000, 5, {}, 0});
    const DisaggRun run = simulate_disagg(w, c, c, k, price, DecodePricer{}, price, DecodePricer{}, true);
    // By hand: prefill chunks of 2,048 and 952 tokens; the transfer 25 us +
    // 3,000 x 131,072 B / 50 GB/s = 7.889 ms; the last prompt token at
    // context 2,999 gives the first token; then decodes at 3,000 .. 3,003.
    const double prefill = mixed_step(cm, {{0, 2048}}).total_s + mixed_step(cm, {{2048, 952}}).total_s;
    const double transfer = 25e-6 + 3000.0 * 131'072 / 50e9;
    const double ttft = prefill + transfer + mixed_step(cm, {{2999, 1}}).total_s;
    double e2e = ttft;
    for (std::int64_t ctx = 3000; ctx < 3004; ++ctx) e2e += mixed_step(cm, {{ctx, 1}}).total_s;
    const RequestRecord& r = run.run.requests[0];
    CHECK(run.transfer_s[0] == Approx(transfer).epsilon(1e-12));
    CHECK(r.first_token_s - r.arrival_s == Approx(ttft).epsilon(1e-12));
    CHECK(r.finish_s - r.arrival_s == Approx(e2e).epsilon(1e-12));
}

TEST_CASE("P/D pools of DP groups: a lone request takes one engine's prefill step, transfer and decode steps as lockstep waves") {
    // The hand figures of the 1P:1D case above (TTFT 18.71 ms, E2E 214.1 ms)
    // when each pool's replica is a DP group of 2 or 4 ranks whose wave costs
    // its busiest rank's step (an idle rank's dummy batch costs nothing here).
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    Workload w;
    w.requests.push_back(SimRequest{0.25, 700, 40, {}, 0});
    for (const std::int64_t dp : {2, 4}) {
        INFO("DP " << dp);
        const DisaggRun run = simulate_disagg(w, c, c, slow_link(), PoolPricing{dp, {}, {}, slowest}, PoolPricing{dp, {}, {}, slowest}, true);
        const RequestRecord& r = run.run.requests[0];
        CHECK(run.times[0].prefill_end_s - r.arrival_s == Approx(0.012).epsilon(1e-9));
        CHECK(run.transfer_s[0] == Approx(0.0017).epsilon(1e-9));
        CHECK(r.first_token_s - r.arrival_s == Approx(0.01871).epsilon(1e-9));
        CHECK(r.finish_s - r.arrival_s == Approx(0.2141).epsilon(1e-9));
        REQUIRE(run.decode.size() == 1);
        CHECK(run.decode[0].steps == 40);  // waves
        CHECK(run.decode[0].total_blocks == dp * 1000);
        // Every engine core of both pools, each its own pool: the fullest
        // peaked at 47 of its 1,000 blocks (ceil(739 / 16), as above).
        CHECK(run.run.dp_ranks.size() == static_cast<std::size_t>(2 * dp));
        CHECK(summarise(run.run, {}).kv_peak_usage == Approx(0.047));
    }
    // A DP decode pool behind a prefill pool of single engines.
    const DisaggRun mixed = simulate_disagg(w, c, c, slow_link(), PoolPricing{1, linear, linear_decode, {}}, PoolPricing{2, {}, {}, slowest}, true);
    CHECK(mixed.run.requests[0].finish_s - mixed.run.requests[0].arrival_s == Approx(0.2141).epsilon(1e-9));
    CHECK(mixed.run.dp_ranks.size() == 3);  // one prefill engine, two decode ranks
}

TEST_CASE("a DP decode replica's ranks pull their KV over their own links") {
    // Two 500-token prompts share one 1,000-token prefill step (15 ms) and
    // reach the decode side together. One decode engine pulls them one after
    // the other on its link (1.5 ms, then 2 ms: the case below); a DP group
    // of 2 sends the first to rank 0 and the second to rank 1 (vLLM's
    // balancer counts the one it routed), each rank's GPUs with their own
    // NIC: both transfers take 1 ms + 500 x 1 us = 1.5 ms.
    Workload w;
    w.requests.push_back(SimRequest{0, 500, 100, {}, 0});
    w.requests.push_back(SimRequest{0, 500, 100, {}, 0});
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    const DisaggRun run = simulate_disagg(w, c, c, slow_link(), PoolPricing{1, linear, linear_decode, {}}, PoolPricing{2, {}, {}, slowest}, true);
    CHECK(run.times[1].prefill_end_s == Approx(0.015).epsilon(1e-9));
    CHECK(run.transfer_s[0] == Approx(0.0015).epsilon(1e-9));
    CHECK(run.transfer_s[1] == Approx(0.0015).epsilon(1e-9));
    // Both decode in one wave each step: first tokens together at 15 + 1.5 + 5.01 ms.
    CHECK(run.run.requests[0].first_token_s == Approx(0.02151).epsilon(1e-9));
    CHECK(run.run.requests[1].first_token_s == Approx(0.02151).epsilon(1e-9));
    CHECK(run.run.dp_ranks[1].requests == 1);
    CHECK(run.run.dp_ranks[2].requests == 1);
}

TEST_CASE("a decode pool short of blocks makes the next request wait for the first to finish") {
    // Two requests of 500 + 100 tokens arrive together and share one 1,000-token
    // prefill step (15 ms). The decode pool has 50 blocks of 16: the first
    // takes ceil(500 / 16) = 32 for its prompt, leaving 18, too few for the
    // second's 32, so it waits (FCFS) until the first finishes and frees its
    // blocks. A pool of 1,000 blocks takes both at once.
    Workload w;
    w.requests.push_back(SimRequest{0, 500, 100, {}, 0});
    w.requests.push_back(SimRequest{0, 500, 100, {}, 0});
    SchedulerConfig p;
    p.num_gpu_blocks = 1000;
    SchedulerConfig d = p;
    d.num_gpu_blocks = 50;
    const DisaggRun small = simulate_disagg(w, p, d, slow_link(), linear, linear_decode, linear, linear_decode, true);
    const DisaggRun large = simulate_disagg(w, p, p, slow_link(), linear, linear_decode, linear, linear_decode, true);
    for (const DisaggRun* run : {&small, &large}) {
        CHECK(run->times[0].prefill_end_s == Approx(0.015).epsilon(1e-9));
        CHECK(run->times[1].prefill_end_s == Approx(0.015).epsilon(1e-9));
        CHECK(run->times[0].transfer_start_s == run->times[0].prefill_end_s);
    }
    CHECK(small.times[1].transfer_start_s == small.run.requests[0].finish_s);
    CHECK(small.run.requests[1].first_token_s > small.run.requests[0].finish_s);
    CHECK(large.times[1].transfer_start_s == large.times[1].prefill_end_s);
    // Both pulls into one replica share its link: the second's 0.5 ms of
    // bytes wait for the first's (1 ms + 0.5 ms, then 1 ms + 0.5 ms more).
    CHECK(large.transfer_s[0] == Approx(0.0015).epsilon(1e-9));
    CHECK(large.transfer_s[1] == Approx(0.002).epsilon(1e-9));
    CHECK(summarise(small.run, {}).ttft_s.max > summarise(large.run, {}).ttft_s.max);
}

TEST_CASE("a decode pool with a sliding-window group rejects a prompt whose pull needs more blocks than the pool") {
    // Two groups of 16-token blocks, full attention and a 100-token window. A
    // 5,000-token prompt fits the worst case a local request needs (313 full
    // blocks + ceil(99 / 16) + 1 = 8 window blocks, with its 10 outputs), but
    // the pull takes the whole prompt in both groups: 2 x 313 = 626 blocks,
    // more than the 500 of the pool, so it could never be admitted and is
    // rejected; the 500-token prompt after it (2 x 32 = 64 blocks) is served.
    // (Found by fuzz_trace as a decode side that never advanced.)
    Workload w;
    w.requests.push_back(SimRequest{0, 5000, 10, {}, 0});
    w.requests.push_back(SimRequest{0.001, 500, 10, {}, 0});
    SchedulerConfig p;
    p.num_gpu_blocks = 1000;
    p.groups = {KvGroup{KvGroupKind::Full, 0, 16}, KvGroup{KvGroupKind::Sliding, 100, 16}};
    SchedulerConfig d = p;
    d.num_gpu_blocks = 500;
    const DisaggRun run = simulate_disagg(w, p, d, slow_link(), linear, linear_decode, linear, linear_decode, true);
    CHECK(run.run.requests[0].rejected);
    CHECK_FALSE(run.run.requests[1].rejected);
    CHECK(run.run.requests[1].finish_s > 0);
}

TEST_CASE("a decode pool whose preempted head cannot fit runs the loaded requests behind it instead of stalling") {
    // Five prompts of 209 tokens with 152 outputs each (361 tokens, 23
    // blocks of 16) on a decode pool of 64 blocks, max_num_seqs 1. Each pull
    // takes 14 blocks while the one running request decodes into what is
    // left; the second request to run needs a block when none is free,
    // preempts itself and comes back at the head needing more blocks than
    // are free, the requests behind it holding theirs with their KV loaded.
    // vLLM's FCFS loop stops at the head and the engine would stall for good
    // (this test looped forever before); the loaded requests start instead,
    // and the head is served once one of them has finished. (Found by
    // fuzz_trace as a decode side that looped at one time, tests/fixtures/fuzz.)
    Workload w;
    for (int i = 0; i < 5; ++i) w.requests.push_back(SimRequest{0, 209, 152, {}, 0});
    SchedulerConfig c;
    c.num_gpu_blocks = 64;
    c.max_num_seqs = 1;
    c.max_num_batched_tokens = 1792;
    c.prefix_caching = false;
    DisaggConfig k = slow_link();
    k.link.bytes_per_s = 1e8;
    const DisaggRun run = simulate_disagg(w, c, c, k, linear, linear_decode, linear, linear_decode, true);
    std::int64_t preemptions = 0;
    for (const RequestRecord& r : run.run.requests) {
        CHECK_FALSE(r.rejected);
        CHECK(r.finish_s > 0);
        preemptions += r.preemptions;
    }
    CHECK(preemptions == 1);
    CHECK(run.run.requests[1].preemptions == 1);
    CHECK(run.run.requests[1].finish_s > run.run.requests[4].finish_s);  // a request behind the head went first
}

TEST_CASE("a preempted head that cannot finish in the free blocks lets the loaded requests behind it go first") {
    // Ten requests of fuzz_trace's input (tests/fixtures/fuzz) on a decode
    // pool of 128 blocks, max_num_seqs 1, 832-token chunks. The seventh
    // (1,313 + 142 tokens) is preempted and comes back at the head needing
    // 91 blocks with 89 free, two loaded requests behind it holding the
    // rest: its first chunk fits, it preempts itself a step later, and so on
    // for ever (this test looped before, at 50,000 preemptions by 554
    // simulated seconds). Now the loaded requests run first and it is
    // served after them, preempted once.
    const StepPricer by_context = [](const std::vector<SeqWork>& s) {
        std::int64_t tokens = 0, cached = 0;
        for (const SeqWork& q : s) tokens += q.new_tokens, cached += q.cached;
        return 0.01 + 1e-6 * static_cast<double>(tokens) + 1e-9 * static_cast<double>(cached);
    };
    const DecodePricer decode = [](std::int64_t batch, std::int64_t context_sum) -> std::optional<double> {
        return 0.01 + 1e-6 * static_cast<double>(batch) + 1e-9 * static_cast<double>(context_sum);
    };
    const double arrival[] = {0, 4.31458, 4.54188, 4.71043, 5.89266, 6.31153, 7.7455, 8.25143, 8.46499, 8.70021};
    const std::int64_t in[] = {374, 396, 879, 91, 91, 381, 1313, 388, 209, 394}, out[] = {44, 583, 55, 16, 16, 84, 142, 84, 152, 124};
    Workload w;
    for (int i = 0; i < 10; ++i) w.requests.push_back(SimRequest{arrival[i], in[i], out[i], {}, 0});
    SchedulerConfig c;
    c.num_gpu_blocks = 128;
    c.max_num_seqs = 1;
    c.max_num_batched_tokens = 832;
    c.prefix_caching = false;
    DisaggConfig k = slow_link();
    k.link = KvLink{1e8, 1e-4};
    k.layerwise = true;
    k.layers = 32;
    const DisaggRun run = simulate_disagg(w, c, c, k, by_context, decode, by_context, decode, true);
    std::int64_t preemptions = 0;
    for (const RequestRecord& r : run.run.requests) {
        CHECK(r.finish_s > 0);
        preemptions += r.preemptions;
    }
    CHECK(preemptions == 1);
    CHECK(run.run.requests[6].preemptions == 1);
    CHECK(run.run.requests[6].finish_s > run.run.requests[7].finish_s);  // served after a loaded request behind it
}

TEST_CASE("every request of a P/D run is served in causal order, the same on every run and stepped one by one") {
    SyntheticSpec s;
    s.rate = 40;
    s.requests = 400;
    s.seed = 7;
    s.input = LengthDist{LengthDist::Kind::Uniform, 100, 3000, {}};
    s.output = LengthDist{LengthDist::Kind::Uniform, 10, 400, {}};
    const Workload w = synthetic_workload(s);
    SchedulerConfig p;
    p.num_gpu_blocks = 2000;
    p.max_num_batched_tokens = 2048;
    SchedulerConfig d = p;
    d.num_gpu_blocks = 600;  // tight: decode-side waits and preemptions
    for (const Router router : {Router::RoundRobin, Router::LeastLoaded})
        for (const auto& [np, nd] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 3}, {3, 1}}) {
            INFO(np << "P:" << nd << "D, router " << static_cast<int>(router));
            DisaggConfig k = slow_link(np, nd);
            k.router = router;
            k.link.bytes_per_s = 1e8;  // 10 us per token: a 3,000-token prompt lands 30 ms (6 steps or more) after its admission
            const DisaggRun a = simulate_disagg(w, p, d, k, linear, linear_decode, linear, linear_decode, true);
            const DisaggRun b = simulate_disagg(w, p, d, k, linear, linear_decode, linear, linear_decode, true);
            // Runs of decode steps jumped give what stepping one by one gives, though remote KV
            // lands in the middle of them (the run stops before the step that would admit it).
            SchedulerConfig stepped = d;
            stepped.jump_decode_runs = false;
            const DisaggRun c = simulate_disagg(w, p, stepped, k, linear, linear_decode, linear, linear_decode, true);
            std::int64_t routed_p = 0, routed_d = 0;
            for (const ReplicaStats& q : a.prefill) routed_p += q.requests;
            for (const ReplicaStats& q : a.decode) routed_d += q.requests;
            CHECK(routed_p == 400);
            CHECK(routed_d == 400);
            CHECK(a.transfer_s.size() == 400);
            CHECK(a.run.replicas.size() == static_cast<std::size_t>(np + nd));
            for (std::size_t i = 0; i < w.requests.size(); ++i) {
                const RequestRecord& r = a.run.requests[i];
                const DisaggTimes& t = a.times[i];
                REQUIRE_FALSE(r.rejected);
                REQUIRE(r.arrival_s <= r.scheduled_s);
                REQUIRE(r.scheduled_s < t.prefill_end_s);
                REQUIRE(t.prefill_end_s <= t.transfer_start_s);
                REQUIRE(t.transfer_start_s < t.transfer_end_s);
                REQUIRE(t.transfer_end_s < r.first_token_s);
                REQUIRE(r.first_token_s <= r.finish_s);
                REQUIRE(r.output_tokens == w.requests[i].output_tokens);
                CHECK(r.finish_s == b.run.requests[i].finish_s);
                CHECK(r.first_token_s == b.run.requests[i].first_token_s);
                CHECK(r.first_token_s == c.run.requests[i].first_token_s);
                CHECK(r.finish_s == c.run.requests[i].finish_s);
            }
            const SimSummary sa = summarise(a.run, {}), sb = summarise(b.run, {});
            CHECK(sa.completed == 400);
            CHECK(sa.itl_s.count == sb.itl_s.count);
            CHECK(sa.tpot_s.p99 == sb.tpot_s.p99);
            CHECK(sa.steps == sb.steps);
        }
}

TEST_CASE("a P/D run refuses a closed loop and zero replicas") {
    Workload w;
    w.requests.push_back(SimRequest{0, 100, 10, {}, 0});
    SchedulerConfig c;
    c.num_gpu_blocks = 100;
    DisaggConfig k = slow_link(0, 1);
    CHECK_THROWS_WITH(simulate_disagg(w, c, c, k, linear, linear_decode, linear, linear_decode), Catch::Contains("--prefill-replicas 0"));
    k = slow_link(1, 0);
    CHECK_THROWS_WITH(simulate_disagg(w, c, c, k, linear, linear_decode, linear, linear_decode), Catch::Contains("--decode-replicas 0"));
    w.concurrency = 4;
    CHECK_THROWS_WITH(simulate_disagg(w, c, c, slow_link(), linear, linear_decode, linear, linear_decode), Catch::Contains("closed loop"));
}
