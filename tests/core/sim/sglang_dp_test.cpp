// SGLang's DP attention (sglang_dp_group, dp_group.cpp): schedulers in
// lockstep behind SGLang's round-robin controller, against one engine and
// results derived by hand, and the invariants of every rank.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "core/sim/dp_group.hpp"
#include "core/sim/metrics.hpp"
#include "io/trace_reader.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

std::int64_t tokens_of(const std::vector<SeqWork>& w) {
    std::int64_t n = 0;
    for (const SeqWork& s : w) n += s.new_tokens;
    return n;
}

// A pass costs 5 ms plus 10 us per token computed in it; a wave, that of its busiest rank.
const StepPricer linear = [](const std::vector<SeqWork>& w) { return 0.005 + 1e-5 * static_cast<double>(tokens_of(w)); };
const DpStepPricer slowest = [](const std::vector<const std::vector<SeqWork>*>& ranks) {
    std::int64_t most = 0;
    for (const auto* r : ranks) most = std::max(most, tokens_of(*r));
    return 0.005 + 1e-5 * static_cast<double>(most);
};

SglangConfig pool(std::int64_t tokens) {
    SglangConfig c;
    c.max_total_tokens = tokens;
    return c;
}

}  // namespace

TEST_CASE("a lone request on an SGLang DP attention group is served as by one scheduler") {
    Workload w;
    w.requests.push_back(SimRequest{0.25, 700, 40, {}, 0});
    const SimRun one = simulate_sglang(w, pool(10'000), linear, true);
    for (const std::int64_t dp : {2, 4, 8}) {
        INFO("DP " << dp);
        const SimRun g = simulate_sglang_dp_cluster(w, pool(10'000), dp, ClusterConfig{}, slowest, true);
        CHECK(g.requests[0].first_token_s == one.requests[0].first_token_s);
        CHECK(g.requests[0].finish_s == one.requests[0].finish_s);
        CHECK(g.steps == one.steps);
        CHECK(g.total_blocks == dp * 10'000);
        REQUIRE(g.dp_ranks.size() == static_cast<std::size_t>(dp));
        CHECK(g.dp_ranks[0].requests == 1);  // round robin starts at rank 0
    }
}

TEST_CASE("SGLang's controller deals requests round robin, and ranks with equal work step as if alone") {
    // Pairs arriving together every second, 100-token prompts and 10 output
    // tokens, on 2 ranks: the first of each pair to rank 0, the second to
    // rank 1, whatever their load. Each wave has the same work on both ranks:
    // a 100-token prefill (5 ms + 100 x 10 us = 6 ms) gives the first token,
    // then 9 decode waves of 5.01 ms: E2E 6 + 45.09 = 51.09 ms, as each
    // request alone on its own engine (sglang_cluster_test.cpp), 10 waves a pair.
    Workload w;
    for (int j = 0; j < 20; ++j)
        for (int k = 0; k < 2; ++k) w.requests.push_back(SimRequest{1.0 * j, 100, 10, {}, 0});
    const SimRun g = simulate_sglang_dp_cluster(w, pool(10'000), 2, ClusterConfig{}, slowest, true);
    for (const RequestRecord& r : g.requests) {
        CHECK(r.first_token_s - r.arrival_s == Approx(0.006).epsilon(1e-9));
        CHECK(r.finish_s - r.arrival_s == Approx(0.05109).epsilon(1e-9));
    }
    REQUIRE(g.dp_ranks.size() == 2);
    CHECK(g.dp_ranks[0].requests == 20);
    CHECK(g.dp_ranks[1].requests == 20);
    CHECK(g.steps == 200);
    // Five requests, one at a time, over 3 ranks: 0, 1, 2, 0, 1.
    Workload five;
    for (const double t : {0.0, 0.01, 0.02, 0.03, 0.15}) five.requests.push_back(SimRequest{t, 50, 100, {}, 0});
    const SimRun d = simulate_sglang_dp_cluster(five, pool(10'000), 3, ClusterConfig{}, slowest, true);
    CHECK(d.dp_ranks[0].requests == 2);
    CHECK(d.dp_ranks[1].requests == 2);
    CHECK(d.dp_ranks[2].requests == 1);
}

TEST_CASE("an SGLang rank's prefill holds the other rank's decode, and a request arriving mid-wave waits for its end") {
    // A at 0 (100 in, 10 out) goes to rank 0: its prefill pass 0 -> 6 ms,
    // then decode waves of 5.01 ms: 6 -> 11.01 ms. B arrives at 7.1 ms (100
    // in, 2 out), dealt to rank 1; it reaches its scheduler when the wave
    // ends, 11.01 ms (alone it would start at 7.1 ms). The next wave runs B's
    // 100-token prefill on rank 1 beside A's decode on rank 0: 6 ms, so B's
    // first token is at 17.01 ms and A waits 6 ms for that token.
    Workload w;
    w.requests.push_back(SimRequest{0, 100, 10, {}, 0});
    w.requests.push_back(SimRequest{0.0071, 100, 2, {}, 0});
    const SimRun g = simulate_sglang_dp_cluster(w, pool(10'000), 2, ClusterConfig{}, slowest, true);
    CHECK(g.dp_ranks[1].requests == 1);
    CHECK(g.requests[1].scheduled_s == Approx(0.01101));
    CHECK(g.requests[1].first_token_s == Approx(0.01701));
    CHECK(summarise(g, {}).itl_s.max == Approx(0.006));
}

TEST_CASE("SGLang DP groups retracting on the Azure trace serve every request soundly, each rank within its own pool") {
    // 600 requests replayed 40 times faster over 3 ranks of 20,000 tokens
    // (the largest request, 4,176 tokens, fits alone), pools and radix trees
    // checked after every pass; open and closed loop; 1 and 2 replicas.
    Workload w = read_trace(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/azure_2023_conv.csv", TraceOptions{"auto", 40.0, 600});
    SglangConfig c = pool(20'000);
    c.context_len = 20'000;
    c.schedule_conservativeness = 0.3;  // as SGLang sets it under DP attention
    for (const std::int64_t concurrency : {0, 48}) {
        w.concurrency = concurrency;
        for (const std::int64_t replicas : {1, 2}) {
            INFO("concurrency " << concurrency << ", replicas " << replicas);
            const SimRun g = simulate_sglang_dp_cluster(w, c, 3, ClusterConfig{replicas, Router::LeastLoaded}, slowest, true);
            std::int64_t routed = 0;
            for (const ReplicaStats& s : g.dp_ranks) {
                routed += s.requests;
                CHECK(s.peak_blocks_used <= s.total_blocks);
                CHECK(s.total_blocks == 20'000);
            }
            CHECK(routed == static_cast<std::int64_t>(w.requests.size()));
            for (const RequestRecord& r : g.requests) {
                REQUIRE(r.finish_s >= 0);
                REQUIRE(r.arrival_s <= r.scheduled_s);
                REQUIRE(r.scheduled_s < r.first_token_s);
                REQUIRE(r.first_token_s <= r.finish_s);
            }
            if (concurrency > 0)
                for (const TimePoint& p : g.timeseries) CHECK(p.running + p.waiting <= concurrency);
            if (concurrency == 0 && replicas == 1) CHECK(g.preemptions > 0);
            const SimRun again = simulate_sglang_dp_cluster(w, c, 3, ClusterConfig{replicas, Router::LeastLoaded}, slowest, true);
            for (std::size_t i = 0; i < g.requests.size(); ++i) CHECK(g.requests[i].finish_s == again.requests[i].finish_s);
        }
    }
}
