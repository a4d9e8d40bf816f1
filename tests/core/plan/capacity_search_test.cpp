// The SLO capacity search's own steps (src/core/plan/capacity_search.cpp)
// against answers derived by hand in each test's comment: thinning a long
// trace, what a replica costs for pruning, the fleet a candidate needs, and
// the ranking with its cost rejections. The search end to end is checked
// through the command (tests/cli/recommend_cmd_test.cpp).
#include "core/plan/capacity_search.hpp"

#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

using namespace kvplan;

namespace {

SloCandidate candidate(const std::string& gpu, std::int64_t tp) {
    SloCandidate c;
    c.gpu = gpu;
    c.tp = tp;
    return c;
}

// A qualifying candidate whose fleet is already sized.
SloCandidate qualified(const std::string& gpu, std::int64_t gpus, std::optional<double> usd_per_hour, bool pd = false) {
    SloCandidate c = candidate(gpu, 1);
    c.fleet.gpus = gpus;
    c.fleet.replicas = gpus;
    c.fleet.usd_per_hour = usd_per_hour;
    c.outcome.max_rate_rps = 1;
    if (pd) {
        c.prefill_replicas = 1;
        c.decode_replicas = 1;
        c.prefill_tp = 1;
    }
    return c;
}

SloCandidate rejected(const std::string& gpu, Rejection why) {
    SloCandidate c = candidate(gpu, 1);
    c.rejection = why;
    return c;
}

}  // namespace

TEST_CASE("capacity search: a long trace keeps every k-th request, k = ceil(requests / most)") {
    Workload w;
    for (int i = 0; i < 10; ++i) w.requests.push_back(SimRequest{static_cast<double>(i), 100 + i, 10, {}, 0});
    // 10 requests, at most 4 a run: k = ceil(10 / 4) = 3, requests 0, 3, 6 and 9 kept.
    Workload thinned = w;
    CHECK(thin_requests(thinned, 4) == 3);
    REQUIRE(thinned.requests.size() == 4);
    CHECK(thinned.requests[1].arrival_s == 3);
    CHECK(thinned.requests[3].input_tokens == 109);
    // At most 10, or no limit: all kept, k = 1.
    Workload all = w;
    CHECK(thin_requests(all, 10) == 1);
    CHECK(thin_requests(all, 0) == 1);
    CHECK(all.requests.size() == 10);
}

TEST_CASE("capacity search: pruning compares replicas in USD when every device is priced, in GPUs when none is") {
    const SloCandidate h100 = candidate("h100-sxm", 2), l40s = candidate("l40s", 1);
    const std::vector<const SloCandidate*> both{&h100, &l40s};
    // h100 TP 2 at 2.5 USD a GPU-hour: 2 x 2.5 = 5.0 USD/h a replica; l40s TP 1 at 0.9: 0.9.
    const std::optional<PruneBy> priced = prune_by(both, {{"h100-sxm", 2.5}, {"l40s", 0.9}}, 20, 5);
    REQUIRE(priced);
    CHECK(priced->replica_cost == std::vector<double>{5.0, 0.9});
    CHECK(priced->target_rps == 20);
    CHECK(priced->keep == 5);
    // Unpriced: 2 GPUs against 1.
    const std::optional<PruneBy> unpriced = prune_by(both, {}, 20, 5);
    REQUIRE(unpriced);
    CHECK(unpriced->replica_cost == std::vector<double>{2, 1});
    // One priced, one not: USD against GPUs has no common unit, nothing is pruned.
    CHECK_FALSE(prune_by(both, {{"h100-sxm", 2.5}}, 20, 5));
    CHECK(gpu_price({{"h100-sxm", 2.5}}, "h100-sxm") == 2.5);
    CHECK_FALSE(gpu_price({{"h100-sxm", 2.5}}, "l40s"));
}

TEST_CASE("capacity search: an outcome that did not qualify is rejected on cost, as a burst, or on its targets") {
    SearchOutcome x;
    x.status = SearchOutcome::Status::Pruned;
    CHECK(rejection_of(x) == Rejection::Cost);
    x.status = SearchOutcome::Status::Burst;
    CHECK(rejection_of(x) == Rejection::Simulation);
    x.status = SearchOutcome::Status::SloAlone;
    CHECK(rejection_of(x) == Rejection::Slo);
    x.status = SearchOutcome::Status::NoRate;
    CHECK(rejection_of(x) == Rejection::Slo);
}

TEST_CASE("capacity search: a fleet is ceil(target / rate) replicas of its GPUs at their price, and scaled per minute, by hand") {
    // 10 req/s against 3 a replica of TP 2: ceil(10 / 3) = 4 replicas, 4 x 2 = 8 GPUs, 8 x 2.5 = 20 USD/h.
    SloCandidate c = candidate("h100-sxm", 2);
    c.outcome.max_rate_rps = 3;
    size_fleet(c, 10, 2.5, 1000, 100, {2, 7, 10});
    CHECK(c.fleet.replicas == 4);
    CHECK(c.fleet.gpus == 8);
    CHECK(*c.fleet.usd_per_hour == Approx(20));
    CHECK(c.serve.dp == 4);  // an aggregated candidate's replicas are its DP in the commands
    // Minutes at 2, 7 and 10 req/s: max(1, ceil(2 / 3)) = 1, ceil(7 / 3) = 3, ceil(10 / 3) = 4 replicas;
    // (1 + 3 + 4) x 2 GPUs x 1/60 h = 16/60 GPU-hours, x 2.5 USD; the fixed 8 GPUs: 8 x 3 / 60 = 0.4.
    REQUIRE(c.scaled);
    CHECK(c.scaled->replicas == std::vector<std::int64_t>{1, 3, 4});
    CHECK(c.scaled->gpu_hours == Approx(16.0 / 60));
    CHECK(*c.scaled->usd == Approx(16.0 / 60 * 2.5));
    CHECK(c.scaled->fixed_gpu_hours == Approx(0.4));

    // A unit of 1 prefill (TP 1) and 2 decode instances (TP 1): 3 GPUs a unit; 10 / 3 -> 4 units, 12 GPUs,
    // unpriced; its instances are separate servers (serve.dp stays 1); synthetic traffic: no scaling.
    SloCandidate u = candidate("h100-sxm", 1);
    u.prefill_replicas = 1;
    u.prefill_tp = 1;
    u.decode_replicas = 2;
    u.outcome.max_rate_rps = 3;
    size_fleet(u, 10, std::nullopt, 1000, 100, {});
    CHECK(u.fleet.gpus == 12);
    CHECK_FALSE(u.fleet.usd_per_hour);
    CHECK(u.serve.dp == 1);
    CHECK_FALSE(u.scaled);
}

TEST_CASE("capacity search: the ranking keeps --top, rejects the rest on cost and lists missed targets first") {
    SloRecommendResult r;
    r.top = 2;
    // Qualified: a 20 USD/h fleet, a 10, an unpriced one and a 15 USD/h unit; best first: 10, 15 (the unit), 20, unpriced.
    r.candidates = {qualified("a", 8, 20), qualified("b", 4, 10), qualified("c", 2, std::nullopt), qualified("d", 6, 15, true)};
    r.rejected = {rejected("m", Rejection::Memory), rejected("x", Rejection::Simulation), rejected("s", Rejection::Slo)};
    rank_candidates(r, true);
    REQUIRE(r.candidates.size() == 2);
    CHECK(r.candidates[0].gpu == "b");
    CHECK(r.candidates[1].gpu == "d");
    REQUIRE(r.qualified.size() == 4);
    CHECK(r.qualified[2].gpu == "a");
    CHECK(r.best_aggregated->gpu == "b");
    CHECK(r.best_disaggregated->gpu == "d");
    CHECK_FALSE(r.disaggregated_wins);  // 15 USD/h against 10
    // Rejected: missed targets, memory, the rest, then cost (ranked 3 and 4).
    std::vector<std::string> order;
    for (const SloCandidate& c : r.rejected) order.push_back(c.gpu);
    CHECK(order == std::vector<std::string>{"s", "m", "x", "a", "c"});
    CHECK(r.rejected[3].rejection == Rejection::Cost);
    CHECK(r.rejected[3].cost_rank == 3);
    CHECK(r.rejected[4].cost_rank == 4);
    CHECK(r.rejected[3].reason.empty());  // the report words it (report/slo_report.cpp, rejection_reason)

    SloRecommendResult plain;
    plain.top = 5;
    plain.candidates = {qualified("a", 8, 20)};
    rank_candidates(plain, false);
    CHECK(plain.qualified.empty());  // without --plot or --report
    CHECK(plain.candidates.size() == 1);
}
