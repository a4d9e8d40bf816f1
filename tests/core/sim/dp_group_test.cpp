// Data-parallel ranks in lockstep (src/core/sim/dp_group.cpp): vLLM's DP
// load balancer and the waves every rank steps together, against results
// derived by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/sim/dp_group.hpp"
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

TEST_CASE("a DP group of one rank, or with a CPU tier, is refused") {
    Workload w;
    w.requests.push_back(SimRequest{0, 10, 2, {}, 0});
    CHECK_THROWS_AS(run_dp(w, 1), Error);
    SchedulerConfig c = pool(100);
    c.cpu_tier.blocks = 10;
    CHECK_THROWS_AS(simulate_dp_cluster(w, c, 2, ClusterConfig{}, slowest), Error);
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
