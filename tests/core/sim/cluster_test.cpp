// Replicas behind a router (src/core/sim/cluster.cpp) against one engine and
// results derived by hand, and the invariants of every replica.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/sim/cluster.hpp"
#include "core/sim/metrics.hpp"
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

TEST_CASE("N replicas of a lone request behave like one engine, whatever the router") {
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    Workload w;
    w.requests.push_back(SimRequest{0.25, 700, 40, {}, 0});
    const SimRun one = simulate(w, c, linear, linear_decode, true);
    for (const Router router : {Router::RoundRobin, Router::LeastLoaded})
        for (const std::int64_t n : {1, 3, 8}) {
            const SimRun many = simulate_cluster(w, c, ClusterConfig{n, router}, linear, linear_decode, true);
            INFO(n << " replicas");
            CHECK(many.requests[0].first_token_s == one.requests[0].first_token_s);
            CHECK(many.requests[0].finish_s == one.requests[0].finish_s);
            CHECK(many.steps == one.steps);
            CHECK(many.total_blocks == n * 1000);
            CHECK(summarise(many, {}).kv_peak_usage == summarise(one, {}).kv_peak_usage);
            REQUIRE(many.replicas.size() == static_cast<std::size_t>(n));
            CHECK(many.replicas[0].requests == 1);  // both routers: replica 0 (index 0 mod n; ties to the lowest)
        }
}

TEST_CASE("round-robin over 2 replicas gives each request of a pair what it gets alone") {
    // Pairs arriving together every second, 100-token prompts and 10 output
    // tokens. Round-robin sends the first of each pair to replica 0 and the
    // second to replica 1, so each runs alone: a 100-token prefill step,
    // 5 ms + 100 x 10 us = 6 ms, then 9 decode steps of 5.01 ms: E2E
    // 6 + 45.09 = 51.09 ms, TTFT 6 ms. One engine runs the pair together: a
    // 200-token step (7 ms) and 9 decodes of 2 (5.02 ms): 52.18 ms.
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    Workload w;
    for (int j = 0; j < 20; ++j)
        for (int k = 0; k < 2; ++k) w.requests.push_back(SimRequest{1.0 * j, 100, 10, {}, 0});
    const SimRun two = simulate_cluster(w, c, ClusterConfig{2, Router::RoundRobin}, linear, linear_decode, true);
    const SimRun one = simulate(w, c, linear, linear_decode, true);
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

TEST_CASE("least-loaded routing beats round-robin's p99 TTFT on bursts of alternating long and short requests") {
    // Bursts of 8 every 4 s, alternating a long request (2,000-token prompt,
    // 600 output tokens: about 3.4 s alone at 5 ms a step) and a short one
    // (100 + 10). Round-robin over 2 replicas sends every long request to
    // replica 0, which then holds 4 long requests per burst with max_num_seqs
    // 2 (about 7 s of work every 4 s): its queue grows without bound while
    // replica 1 idles. Least-loaded counts outstanding requests and sends new
    // ones to the emptier replica, so long requests split about evenly.
    SchedulerConfig c;
    c.num_gpu_blocks = 5000;
    c.max_num_seqs = 2;
    Workload w;
    for (int b = 0; b < 30; ++b)
        for (int k = 0; k < 8; ++k) w.requests.push_back(k % 2 == 0 ? SimRequest{4.0 * b, 2000, 600, {}, 0} : SimRequest{4.0 * b, 100, 10, {}, 0});
    const SimRun rr = simulate_cluster(w, c, ClusterConfig{2, Router::RoundRobin}, linear, linear_decode, true);
    const SimRun ll = simulate_cluster(w, c, ClusterConfig{2, Router::LeastLoaded}, linear, linear_decode, true);
    expect_sound(rr);
    expect_sound(ll);
    const double rr_p99 = summarise(rr, {}).ttft_s.p99, ll_p99 = summarise(ll, {}).ttft_s.p99;
    INFO("p99 TTFT round-robin " << rr_p99 << " s, least-loaded " << ll_p99 << " s");
    CHECK(ll_p99 < 0.5 * rr_p99);
}

TEST_CASE("one replica is simulate(), and a closed loop through replicas completes every request") {
    SchedulerConfig c;
    c.num_gpu_blocks = 300;  // small enough to preempt
    c.max_num_seqs = 16;
    Workload w;
    for (int i = 0; i < 200; ++i) w.requests.push_back(SimRequest{0.01 * i, 300 + 37 * (i % 11), 20 + 13 * (i % 7), {}, 0});
    for (const std::int64_t concurrency : {0, 12}) {
        w.concurrency = concurrency;
        const SimRun a = simulate(w, c, linear, linear_decode, true);
        const SimRun b = simulate_cluster(w, c, ClusterConfig{1, Router::LeastLoaded}, linear, linear_decode, true);
        INFO("concurrency " << concurrency);
        CHECK(a.preemptions > 0);
        REQUIRE(a.requests.size() == b.requests.size());
        for (std::size_t i = 0; i < a.requests.size(); ++i) CHECK(a.requests[i].finish_s == b.requests[i].finish_s);
        CHECK(a.end_s == b.end_s);
        for (const Router router : {Router::RoundRobin, Router::LeastLoaded}) {
            const SimRun many = simulate_cluster(w, c, ClusterConfig{3, router}, linear, linear_decode, true);
            expect_sound(many);
            // A closed loop of 12 clients over 3 replicas: never more than 12 in flight.
            if (concurrency > 0) {
                for (const TimePoint& p : many.timeseries) CHECK(p.running + p.waiting <= 12);
            }
            // Same inputs, same run.
            const SimRun again = simulate_cluster(w, c, ClusterConfig{3, router}, linear, linear_decode, true);
            for (std::size_t i = 0; i < many.requests.size(); ++i) CHECK(many.requests[i].finish_s == again.requests[i].finish_s);
        }
    }
}
