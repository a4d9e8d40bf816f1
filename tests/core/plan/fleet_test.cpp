// A fleet's size and cost (src/core/plan/fleet.cpp) against answers
// derived by hand: replicas, GPUs and the cost per million tokens, and a
// trace's fleet scaled minute by minute. Moved with the code from
// tests/core/sim/slo_search_test.cpp.
#include "core/plan/fleet.hpp"

#include <optional>
#include <vector>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/sim/slo_search.hpp"

using namespace kvplan;

TEST_CASE("fleet: replicas, GPUs and the cost per million tokens of a fleet, by hand") {
    // 10 req/s over 3.5 req/s per replica: ceil(2.86) = 3 replicas of TP 2 =
    // 6 GPUs at 2.5 USD per GPU-hour = 15 USD/hour. The traffic carries
    // 10 x 3600 x 1000 = 36e6 input tokens and 10 x 3600 x 200 = 7.2e6 output
    // tokens an hour: 15 / 36 = 0.41667 USD per million input tokens,
    // 15 / 7.2 = 2.08333 per million output tokens, 15 / 43.2 = 0.34722 per
    // million tokens of both.
    const FleetCost f = fleet_cost(10, 3.5, 2, 2.5, 1000, 200);
    CHECK(f.replicas == 3);
    CHECK(static_cast<double>(f.replicas) * 3.5 >= 10);
    CHECK(f.gpus == 6);
    CHECK(*f.usd_per_hour == Approx(15.0));
    CHECK(*f.usd_per_million_input_tokens == Approx(15.0 / 36.0));
    CHECK(*f.usd_per_million_output_tokens == Approx(15.0 / 7.2));
    CHECK(*f.usd_per_million_tokens == Approx(15.0 / 43.2));
    const FleetCost unpriced = fleet_cost(10, 5, 1, std::nullopt, 1000, 200);
    CHECK(unpriced.replicas == 2);
    CHECK_FALSE(unpriced.usd_per_hour);
    CHECK_FALSE(unpriced.usd_per_million_output_tokens);
    CHECK_THROWS_AS(fleet_cost(10, 0, 1, std::nullopt, 1000, 200), Error);
}

TEST_CASE("fleet: a trace's fleet scaled minute by minute, by hand") {
    // Arrivals at 0, 10, 59.9 s (window 0: 3 / 60 = 0.05 req/s), none in
    // 60-120 s (window 1: 0), 30 at 120 + k s for k = 0..29 (window 2:
    // 30 / 60 = 0.5 req/s) and one at 185 s (window 3, partial: 1/60).
    Workload w;
    for (const double t : {0.0, 10.0, 59.9}) w.requests.push_back(SimRequest{t, 10, 10, {}, 0});
    for (int k = 0; k < 30; ++k) w.requests.push_back(SimRequest{120.0 + k, 10, 10, {}, 0});
    w.requests.push_back(SimRequest{185.0, 10, 10, {}, 0});
    const std::vector<double> rates = window_rates_rps(w, 60);
    REQUIRE(rates.size() == 4);
    CHECK(rates[0] == Approx(0.05));
    CHECK(rates[1] == 0);
    CHECK(rates[2] == Approx(0.5));
    CHECK(rates[3] == Approx(1.0 / 60));
    // At 0.2 req/s per replica on TP 2 at 2.5 USD per GPU-hour: windows
    // need 1 (0.05 / 0.2 rounds up), 1 (at least one), ceil(0.5 / 0.2) = 3
    // and 1 replicas: 6 replica-minutes x 2 GPUs = 12 GPU-minutes = 0.2
    // GPU-hours, 0.5 USD. The fixed fleet for the peak minute (30 in any
    // 60 s = 0.5 req/s: 3 replicas, 6 GPUs) over the 4 windows: 24
    // GPU-minutes = 0.4 GPU-hours, 1.0 USD.
    const FleetCost fixed = fleet_cost(peak_rate_rps(w, 60), 0.2, 2, 2.5, 10, 10);
    REQUIRE(fixed.replicas == 3);
    const ScaledFleet f = replicas_over_time(rates, 60, 0.2, fixed, 2, 2.5);
    CHECK(f.replicas == std::vector<std::int64_t>{1, 1, 3, 1});
    CHECK(f.min_replicas == 1);
    CHECK(f.max_replicas == 3);
    CHECK(f.gpu_hours == Approx(0.2));
    CHECK(f.fixed_gpu_hours == Approx(0.4));
    CHECK(*f.usd == Approx(0.5));
    CHECK(*f.fixed_usd == Approx(1.0));
    const ScaledFleet unpriced = replicas_over_time(rates, 60, 0.2, fixed, 2, std::nullopt);
    CHECK_FALSE(unpriced.usd);
    CHECK(window_rates_rps(Workload{}, 60).empty());
    CHECK_THROWS_AS(replicas_over_time(rates, 60, 0, fixed, 2, std::nullopt), Error);
}
