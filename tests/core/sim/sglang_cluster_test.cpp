// SGLang engines behind a router (simulate_sglang_cluster, cluster.cpp)
// against one engine and results derived by hand, and the invariants of
// every replica.
#include <string>

#include <catch2/catch.hpp>

#include "core/sim/cluster.hpp"
#include "core/sim/metrics.hpp"
#include "io/trace_reader.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

// A pass costs 5 ms plus 10 us per token computed in it.
const StepPricer linear = [](const std::vector<SeqWork>& w) {
    std::int64_t tokens = 0;
    for (const SeqWork& s : w) tokens += s.new_tokens;
    return 0.005 + 1e-5 * static_cast<double>(tokens);
};

void expect_sound(const SimRun& run) {
    for (const RequestRecord& r : run.requests) {
        REQUIRE_FALSE(r.rejected);
        REQUIRE(r.finish_s >= 0);
        REQUIRE(r.arrival_s <= r.scheduled_s);
        REQUIRE(r.scheduled_s < r.first_token_s);
        REQUIRE(r.first_token_s <= r.finish_s);
    }
    std::int64_t routed = 0;
    for (const ReplicaStats& s : run.replicas) routed += s.requests;
    CHECK(routed == static_cast<std::int64_t>(run.requests.size()));
}

}  // namespace

TEST_CASE("N SGLang replicas of a lone request behave like one engine, whatever the router") {
    SglangConfig c;
    c.max_total_tokens = 10'000;
    Workload w;
    w.requests.push_back(SimRequest{0.25, 700, 40, {}, 0});
    const SimRun one = simulate_sglang(w, c, linear, true);
    for (const Router router : {Router::RoundRobin, Router::LeastLoaded})
        for (const std::int64_t n : {1, 3, 8}) {
            const SimRun many = simulate_sglang_cluster(w, c, ClusterConfig{n, router}, linear, true);
            INFO(n << " replicas");
            CHECK(many.requests[0].first_token_s == one.requests[0].first_token_s);
            CHECK(many.requests[0].finish_s == one.requests[0].finish_s);
            CHECK(many.steps == one.steps);
            CHECK(many.total_blocks == n * 10'000);
            REQUIRE(many.replicas.size() == static_cast<std::size_t>(n));
            CHECK(many.replicas[0].requests == 1);
        }
}

TEST_CASE("round-robin over 2 SGLang replicas gives each request of a pair what it gets alone") {
    // Pairs arriving together every second, 100-token prompts and 10 output
    // tokens. Round-robin sends the first of each pair to replica 0 and the
    // second to replica 1, so each runs alone: a 100-token prefill pass,
    // 5 ms + 100 x 10 us = 6 ms, gives the first token, then 9 decode passes
    // of 5.01 ms: E2E 6 + 45.09 = 51.09 ms. One engine prefills the pair in
    // one pass (200 tokens, 7 ms) and decodes both together (5.02 ms): 52.18 ms.
    SglangConfig c;
    c.max_total_tokens = 10'000;
    Workload w;
    for (int j = 0; j < 20; ++j)
        for (int k = 0; k < 2; ++k) w.requests.push_back(SimRequest{1.0 * j, 100, 10, {}, 0});
    const SimRun two = simulate_sglang_cluster(w, c, ClusterConfig{2, Router::RoundRobin}, linear, true);
    const SimRun one = simulate_sglang(w, c, linear, true);
    expect_sound(two);
    for (std::size_t i = 0; i < w.requests.size(); ++i) {
        const RequestRecord& r = two.requests[i];
        CHECK(r.first_token_s - r.arrival_s == Approx(0.006).epsilon(1e-9));
        CHECK(r.finish_s - r.arrival_s == Approx(0.05109).epsilon(1e-9));
        CHECK(one.requests[i].finish_s - one.requests[i].arrival_s == Approx(0.05218).epsilon(1e-9));
    }
    CHECK(two.replicas[0].requests == 20);
    CHECK(two.replicas[1].requests == 20);
    CHECK(two.steps == 2 * one.steps);
}

TEST_CASE("one SGLang replica is simulate_sglang(), and replicas retracting on the Azure trace serve every request soundly") {
    // A pool small enough to retract (20,000 tokens; the largest request,
    // 4,176 tokens, fits alone), open and closed loop, both routers.
    Workload w = read_trace(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/azure_2023_conv.csv", TraceOptions{"auto", 40.0, 600});
    SglangConfig c;
    c.max_total_tokens = 20'000;
    c.context_len = 20'000;
    for (const std::int64_t concurrency : {0, 24}) {
        w.concurrency = concurrency;
        INFO("concurrency " << concurrency);
        const SimRun a = simulate_sglang(w, c, linear, true);
        const SimRun b = simulate_sglang_cluster(w, c, ClusterConfig{1, Router::LeastLoaded}, linear, true);
        CHECK(a.preemptions > 0);
        REQUIRE(a.requests.size() == b.requests.size());
        for (std::size_t i = 0; i < a.requests.size(); ++i) CHECK(a.requests[i].finish_s == b.requests[i].finish_s);
        CHECK(a.end_s == b.end_s);
        CHECK(a.steps == b.steps);
        for (const Router router : {Router::RoundRobin, Router::LeastLoaded}) {
            const SimRun many = simulate_sglang_cluster(w, c, ClusterConfig{3, router}, linear, true);
            expect_sound(many);
            if (concurrency > 0)
                for (const TimePoint& p : many.timeseries) CHECK(p.running + p.waiting <= 24);
            for (const TimePoint& p : many.timeseries) REQUIRE(p.kv_cache_usage <= 1.0);
            const SimRun again = simulate_sglang_cluster(w, c, ClusterConfig{3, router}, linear, true);
            for (std::size_t i = 0; i < many.requests.size(); ++i) CHECK(many.requests[i].finish_s == again.requests[i].finish_s);
        }
    }
}
