// Replicas behind a router (src/core/sim/cluster.cpp) against one engine and
// results derived by hand, and the invariants of every replica.
#include "core/sim/cluster.hpp"

#include <cmath>

#include <catch2/catch.hpp>

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

TEST_CASE("a cluster's series is, second by second, the sum of its replicas' series") {
    // Round-robin over 2 replicas with unequal requests: replica 0 gets the
    // even requests and replica 1 the odd ones, and each then runs exactly
    // as a lone engine on its half. So second s of the cluster's series is
    // the sum of second s of the two lone runs (KV usage weighted by their
    // pools), however the points are run-length held. Replica 1's traffic
    // ends sooner: its series is shorter, and its seconds past its end add 0.
    SchedulerConfig c;
    c.num_gpu_blocks = 60;  // small enough to preempt now and then
    Workload w, even, odd;
    for (int j = 0; j < 60; ++j) {
        const SimRequest r{0.37 * j + (j > 40 ? 30.0 : 0.0), 80 + 37 * (j % 7), 5 + 11 * (j % 5), {}, 0};
        if (j % 2 == 0 || j < 50) w.requests.push_back(r);
    }
    for (std::size_t i = 0; i < w.requests.size(); ++i) (i % 2 == 0 ? even : odd).requests.push_back(w.requests[i]);
    const SimRun two = simulate_cluster(w, c, ClusterConfig{2, Router::RoundRobin}, linear, linear_decode, true);
    const std::vector<TimePoint> a = per_second(simulate(even, c, linear, linear_decode, true).timeseries);
    const std::vector<TimePoint> b = per_second(simulate(odd, c, linear, linear_decode, true).timeseries);
    const std::vector<TimePoint> sum = per_second(two.timeseries);
    REQUIRE(a.size() > b.size());
    REQUIRE(sum.size() == a.size());
    CHECK(two.timeseries.size() < sum.size());  // the idle stretch is held as one point
    for (std::size_t s = 0; s < sum.size(); ++s) {
        INFO("second " << s + 1);
        const TimePoint zero{a[s].t_s, 1, 0, 0, 0, 0, 0};
        const TimePoint& q = s < b.size() ? b[s] : zero;
        CHECK(sum[s].t_s == static_cast<double>(s + 1));
        CHECK(sum[s].running == a[s].running + q.running);
        CHECK(sum[s].waiting == a[s].waiting + q.waiting);
        CHECK(sum[s].kv_cache_usage == Approx((a[s].kv_cache_usage + q.kv_cache_usage) / 2).margin(1e-12));
        CHECK(sum[s].generation_tokens_per_s == a[s].generation_tokens_per_s + q.generation_tokens_per_s);
        CHECK(sum[s].prompt_tokens_per_s == a[s].prompt_tokens_per_s + q.prompt_tokens_per_s);
    }
}

TEST_CASE("a trace spanning 53 days costs a few series points, not one per second") {
    // Found by fuzzing: arrivals 4.59 x 10^6 s apart made every replica log
    // 4.59 million idle seconds, and summing them took longer than the
    // fuzzer's 10 s limit. Each request here is a 16-token prefill (5.16 ms)
    // and 3 decodes (5.01 ms), done within its second. A second's line is
    // written by the first step that ends past it, so the run's series is:
    // second 1 (the first request's 16 prompt and 4 output tokens), then
    // seconds 2 to 4,590,000 as one idle point, written by the second
    // request's first step; the run ends before second 4,590,001. A cluster
    // of 3 routes the requests to replicas 0 and 1: replica 0 takes no step
    // after second 1, so it writes no line, and replica 1's first step
    // writes seconds 1 to 4,590,000 idle. The sum is that one point.
    SchedulerConfig c;
    c.num_gpu_blocks = 100;
    Workload w;
    w.requests.push_back(SimRequest{0.0, 16, 4, {}, 0});
    w.requests.push_back(SimRequest{4'590'000.5, 16, 4, {}, 0});
    for (const std::int64_t n : {1, 3}) {
        INFO(n << " replicas");
        const SimRun run = simulate_cluster(w, c, ClusterConfig{n, Router::RoundRobin}, linear, linear_decode, true);
        const std::vector<TimePoint>& ts = run.timeseries;
        if (n == 1) {
            REQUIRE(ts.size() == 2);
            CHECK(ts[0].t_s == 1);
            CHECK(ts[0].seconds == 1);
            CHECK(ts[0].prompt_tokens_per_s == 16);
            CHECK(ts[0].generation_tokens_per_s == 4);
        } else {
            REQUIRE(ts.size() == 1);
        }
        CHECK(ts.back().t_s == (n == 1 ? 2 : 1));
        CHECK(ts.back().seconds == (n == 1 ? 4'589'999 : 4'590'000));
        CHECK(ts.back().prompt_tokens_per_s == 0);
        CHECK(ts.back().generation_tokens_per_s == 0);
        CHECK(per_second(run.timeseries).size() == 4'590'000);
    }
}
