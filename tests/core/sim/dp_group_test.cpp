// Data-parallel ranks in lockstep (src/core/sim/dp_group.cpp): vLLM's DP
// load balancer and the waves every rank steps together, against results
// derived by hand.
#include "core/sim/dp_group.hpp"

#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/sim/metrics.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

std::int64_t tokens_of(const std::vector<SeqWork>& w) {
    std::int64_t n = 0;
    for (const SeqWork& s : w) n += s.new_tokens;
    return n;
}

// A wave costs 5 ms plus 10 us per token of its busiest rank.
const DpStepPricer slowest = [](const std::vector<const std::vector<SeqWork>*>& ranks) {
    std::int64_t most = 0;
    for (const auto* r : ranks) most = std::max(most, tokens_of(*r));
    return 0.005 + 1e-5 * static_cast<double>(most);
};
// The same 5 ms + 10 us a token for one engine.
const StepPricer linear = [](const std::vector<SeqWork>& w) { return 0.005 + 1e-5 * static_cast<double>(tokens_of(w)); };

// 10 ms a wave plus 10 us per token of its busiest rank (cpu_tier_test's per-token price).
const DpStepPricer per_token_wave = [](const std::vector<const std::vector<SeqWork>*>& ranks) {
    std::int64_t most = 0;
    for (const auto* r : ranks) most = std::max(most, tokens_of(*r));
    return 0.01 + 1e-5 * static_cast<double>(most);
};

SchedulerConfig pool(std::int64_t blocks) {
    SchedulerConfig c;
    c.num_gpu_blocks = blocks;
    return c;
}

SimRun run_dp(const Workload& w, std::int64_t dp, std::int64_t blocks = 1000) {
    return simulate_dp_cluster(w, pool(blocks), dp, ClusterConfig{}, slowest, true);
}

}  // namespace

TEST_CASE("a lone request on a DP group is served as by one engine") {
    Workload w;
    w.requests.push_back(SimRequest{0.25, 700, 40, {}, 0});
    const SimRun one = simulate(w, pool(1000), linear, true);
    for (const std::int64_t dp : {2, 4, 8}) {
        INFO("DP " << dp);
        const SimRun g = run_dp(w, dp);
        CHECK(g.requests[0].first_token_s == one.requests[0].first_token_s);
        CHECK(g.requests[0].finish_s == one.requests[0].finish_s);
        CHECK(g.steps == one.steps);
        CHECK(g.total_blocks == dp * 1000);
        REQUIRE(g.dp_ranks.size() == static_cast<std::size_t>(dp));
        CHECK(g.dp_ranks[0].requests == 1);  // every score 0: the lowest rank
        CHECK(summarise(g, {}).kv_peak_usage == summarise(one, {}).kv_peak_usage);
    }
}

TEST_CASE("two requests at once go to two ranks, and step together") {
    // A and B arrive at 0 with 100 prompt tokens and 3 output tokens. A: all
    // scores 0, rank 0, whose waiting count becomes 1 (score 4); B: rank 1.
    // Wave 1 prefills 100 tokens on each rank: 5 + 1 = 6 ms, both first
    // tokens at 6 ms; then two decode waves of 5.01 ms: 11.01 and 16.02 ms.
    Workload w;
    w.requests.push_back(SimRequest{0, 100, 3, {}, 0});
    w.requests.push_back(SimRequest{0, 100, 3, {}, 0});
    const SimRun g = run_dp(w, 2);
    REQUIRE(g.dp_ranks.size() == 2);
    CHECK(g.dp_ranks[0].requests == 1);
    CHECK(g.dp_ranks[1].requests == 1);
    for (const RequestRecord& r : g.requests) {
        CHECK(r.first_token_s == Approx(0.006));
        CHECK(r.finish_s == Approx(0.01602));
    }
    CHECK(g.steps == 3);  // waves, not the ranks' six steps
    CHECK(g.dp_ranks[0].steps == 3);
}

TEST_CASE("a request that arrives mid-wave waits for the wave's end, and its prefill slows the other rank's decode") {
    // A at 0 (100 in, 10 out) on rank 0: prefill 0 -> 6 ms, then decode
    // waves of 5.01 ms: 6 -> 11.01 ms. B arrives at 7.1 ms: in the same
    // publish window A's routing left rank 0 at score 4, so B goes to rank 1,
    // reaching it at the wave's end, 11.01 ms (alone it would start at 7.1).
    // The next wave prefills B's 100 tokens on rank 1 beside A's decode:
    // 6 ms, so B's first token is at 17.01 ms and A waits 6 ms for its token.
    Workload w;
    w.requests.push_back(SimRequest{0, 100, 10, {}, 0});
    w.requests.push_back(SimRequest{0.0071, 100, 2, {}, 0});
    const SimRun g = run_dp(w, 2);
    CHECK(g.dp_ranks[1].requests == 1);
    CHECK(g.requests[1].scheduled_s == Approx(0.01101));
    CHECK(g.requests[1].first_token_s == Approx(0.01701));
    const SimSummary s = summarise(g, {});
    CHECK(s.itl_s.max == Approx(0.006));
}

TEST_CASE("vLLM's balancer counts the requests it routed since the last published counts") {
    // Requests at 0, 10, 20 and 30 ms with long outputs, then one at 150 ms.
    // Counts published at 0 (all zero); each pick adds a waiting request:
    //   0 ms  -> rank 0 (scores 0, 0), rank 0 now 4
    //   10 ms -> rank 1 (4, 0), rank 1 now 4
    //   20 ms -> rank 0 (4, 4: the lower), rank 0 now 8
    //   30 ms -> rank 1 (8, 4)
    // 150 ms is past the 100 ms window: the counts are published again,
    // every request running (2 and 2, scores 2 and 2): rank 0.
    Workload w;
    for (const double t : {0.0, 0.01, 0.02, 0.03, 0.15}) w.requests.push_back(SimRequest{t, 50, 100, {}, 0});
    const SimRun g = run_dp(w, 2);
    CHECK(g.dp_ranks[0].requests == 3);
    CHECK(g.dp_ranks[1].requests == 2);
    for (const RequestRecord& r : g.requests) CHECK(r.finish_s > 0);
}

TEST_CASE("a closed loop on a DP group serves every request, each rank within its own pool") {
    Workload w;
    for (int i = 0; i < 60; ++i) w.requests.push_back(SimRequest{0, 200 + 37 * (i % 7), 20 + 11 * (i % 5), {}, 0});
    w.concurrency = 12;
    // 40 blocks of 16 tokens a rank: a few requests each, preemptions on the way.
    const SimRun g = run_dp(w, 4, 40);
    std::int64_t routed = 0;
    for (const ReplicaStats& s : g.dp_ranks) {
        routed += s.requests;
        CHECK(s.peak_blocks_used <= 40);
        CHECK(s.requests > 0);
    }
    CHECK(routed == 60);
    for (const RequestRecord& r : g.requests) {
        REQUIRE(r.finish_s >= 0);
        CHECK(r.first_token_s <= r.finish_s);
    }
}

TEST_CASE("replicas of DP groups: the router spreads requests over groups, each group over its ranks") {
    Workload w;
    for (int i = 0; i < 40; ++i) w.requests.push_back(SimRequest{0.01 * i, 300, 30, {}, 0});
    const SimRun g = simulate_dp_cluster(w, pool(1000), 2, ClusterConfig{2, Router::RoundRobin}, slowest, true);
    REQUIRE(g.replicas.size() == 2);
    CHECK(g.replicas[0].requests == 20);
    REQUIRE(g.dp_ranks.size() == 4);
    std::int64_t routed = 0;
    for (const ReplicaStats& s : g.dp_ranks) routed += s.requests;
    CHECK(routed == 40);
    CHECK(g.total_blocks == 4000);
}

TEST_CASE("a DP group of one rank is refused") {
    Workload w;
    w.requests.push_back(SimRequest{0, 10, 2, {}, 0});
    CHECK_THROWS_AS(run_dp(w, 1), Error);
}

TEST_CASE("DP ranks with a CPU tier each load from their own, and a wave waits for the first load to end") {
    // tests/core/sim/cpu_tier_test.cpp's eviction, on each of two ranks at
    // once: A (0 s) and C (2 s) share 4,096 leading tokens, B (1 s) shares
    // nothing; each prompt is 4,112 tokens and each output 2, and a rank's
    // pool (258 blocks) is exactly one request's, so B evicts A's blocks
    // from the GPU. Every request comes twice at the same instant: vLLM's
    // balancer sends the first to rank 0 (all scores 0) and the second to
    // rank 1 (it counts the one it routed), so both ranks run the same
    // stream and every wave costs one rank's step.
    Workload w;
    for (const auto& [at, content] : std::initializer_list<std::pair<double, int>>{{0.0, 1}, {1.0, 2}, {2.0, 1}})
        for (int copy = 0; copy < 2; ++copy) w.requests.push_back(SimRequest{at, 4112, 2, {static_cast<std::uint64_t>(content)}, 4096});
    SchedulerConfig c = pool(258);
    c.cpu_tier = CpuTierConfig{1000, 1'000'000, 1e10, 0.0};
    const SimRun g = simulate_dp_cluster(w, c, 2, ClusterConfig{}, per_token_wave, true);
    REQUIRE(g.dp_ranks.size() == 2);
    CHECK(g.dp_ranks[0].requests == 3);
    CHECK(g.dp_ranks[1].requests == 3);
    // As on one engine: C waits for its 256 blocks, 256 x 10^6 B / 10^10 B/s
    // = 0.0256 s (both ranks waiting, the group idles till then), then
    // computes its last 16 tokens, 0.01 + 1e-5 x 16 = 0.01016 s: TTFT 0.03576 s.
    for (std::size_t i : {4, 5}) {
        CHECK(g.requests[i].first_token_s - g.requests[i].arrival_s == Approx(0.03576).epsilon(1e-9));
        CHECK(g.requests[i].cached_tokens == 4096);
    }
    // A's TTFT, a 4,112-token prefill: 0.01 + 0.04112 = 0.05112 s.
    CHECK(g.requests[0].first_token_s == Approx(0.05112).epsilon(1e-9));
    // Each rank its own tier: twice one engine's figures (cpu_tier_test):
    // 256 blocks loaded and 515 stored, of 10^6 B each.
    CHECK(g.cpu_hit_tokens == 2 * 4096);
    CHECK(g.onload_bytes == 2 * 256'000'000);
    CHECK(g.offload_bytes == 2 * 515'000'000);
    // And against one engine over one copy of the stream, request by request.
    Workload one;
    for (std::size_t i = 0; i < w.requests.size(); i += 2) one.requests.push_back(w.requests[i]);
    SchedulerConfig single = c;
    single.jump_decode_runs = false;
    const StepPricer per_token = [](const std::vector<SeqWork>& s) { return 0.01 + 1e-5 * static_cast<double>(tokens_of(s)); };
    const SimRun e = simulate(one, single, per_token, true);
    for (std::size_t i = 0; i < one.requests.size(); ++i) {
        INFO("request " << i);
        CHECK(g.requests[2 * i].first_token_s == e.requests[i].first_token_s);
        CHECK(g.requests[2 * i + 1].finish_s == e.requests[i].finish_s);
    }
}

TEST_CASE("a DP rank waiting for its load idles through the other rank's waves") {
    // Rank 0 runs the eviction above once (A at 0 s, B at 1 s, C at 2 s)
    // while rank 1 decodes D, which arrives at 0 s right after A (the
    // balancer counts A on rank 0) with a 16-token prompt and 4,000 output
    // tokens (251 blocks, within the 258). B and C go to rank 0, the idle
    // one. From A's end on, every wave without a prefill on rank 0 is D's
    // decode: 0.01 + 1e-5 = 0.01001 s. C reaches rank 0 at the start of the
    // first wave after 2 s (0 to 0.01001 s late), starts its 0.0256 s load
    // and idles; the load ends within the third wave, so C is admitted at
    // the start of the fourth, 3 x 0.01001 = 0.03003 s after it reached
    // rank 0, and its 16 tokens take that wave: 0.01 + 1e-5 x 16 = 0.01016 s.
    Workload w;
    w.requests.push_back(SimRequest{0.0, 4112, 2, {1}, 4096});
    w.requests.push_back(SimRequest{0.0, 16, 4000, {}, 0});
    w.requests.push_back(SimRequest{1.0, 4112, 2, {2}, 4096});
    w.requests.push_back(SimRequest{2.0, 4112, 2, {1}, 4096});
    SchedulerConfig c = pool(258);
    c.cpu_tier = CpuTierConfig{1000, 1'000'000, 1e10, 0.0};
    const SimRun g = simulate_dp_cluster(w, c, 2, ClusterConfig{}, per_token_wave, true);
    CHECK(g.dp_ranks[0].requests == 3);
    CHECK(g.dp_ranks[1].requests == 1);
    const RequestRecord& rc = g.requests[3];
    CHECK(rc.cached_tokens == 4096);
    CHECK(rc.first_token_s - rc.scheduled_s == Approx(0.01016).epsilon(1e-9));
    CHECK(rc.scheduled_s - rc.arrival_s >= 0.03003 - 1e-9);
    CHECK(rc.scheduled_s - rc.arrival_s < 0.03003 + 0.01001);
    CHECK(g.onload_bytes == 256'000'000);
    // D is never held up: its waves run on while C loads.
    CHECK(g.requests[1].finish_s > g.requests[3].finish_s);
    CHECK(summarise(g, {}).completed == 4);
}

TEST_CASE("a speculative DP group: a lone request keeps its drafts as one engine does, and a busy group serves every request") {
    // K = 2 drafts, every one accepted (rates 1): each verify step gives 3
    // tokens. A lone request on a DP group of 2 is served as by one engine:
    // the idle rank's dummy batch costs nothing more (the wave is the busy
    // rank's step plus its drafts), so the times are equal.
    SchedulerConfig c = pool(1000);
    c.spec.k = 2;
    c.spec.rates = {1.0, 1.0};
    c.spec.draft_s = [](std::int64_t batch, std::int64_t) { return 1e-4 * static_cast<double>(batch); };
    c.spec.seed = 1;
    Workload w;
    w.requests.push_back(SimRequest{0, 300, 31, {}, 0});
    const SimRun one = simulate(w, c, linear, DecodePricer{}, true);
    const SimRun g = simulate_dp_cluster(w, c, 2, ClusterConfig{}, slowest, true);
    CHECK(g.requests[0].first_token_s == one.requests[0].first_token_s);
    CHECK(g.requests[0].finish_s == one.requests[0].finish_s);
    CHECK(g.spec_kept_tokens == one.spec_kept_tokens);
    // 300 in + 31 out: the prefill gives token 1, then 10 verify steps of 3.
    CHECK(one.steps == 11);
    // Sixty requests at once over 4 ranks with half the drafts rejected: all served, deterministically.
    c.spec.rates = {0.5, 0.5};
    Workload many;
    for (int i = 0; i < 60; ++i) many.requests.push_back(SimRequest{0.002 * i, 200 + 13 * (i % 9), 20 + 7 * (i % 5), {}, 0});
    const SimRun a = simulate_dp_cluster(many, c, 4, ClusterConfig{}, slowest, true);
    const SimRun b = simulate_dp_cluster(many, c, 4, ClusterConfig{}, slowest, true);
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        REQUIRE(a.requests[i].finish_s > 0);
        CHECK(a.requests[i].finish_s == b.requests[i].finish_s);
    }
    CHECK(a.spec_verifies > 0);
}
