// The SLO search (src/core/sim/slo_search.cpp) against answers derived by
// hand: an M/D/1 queue whose idle probability gives the rate, a lone request
// that misses its target, the peak-minute rate (the fleet's cost is
// tests/core/plan/fleet_test.cpp's).
#include "core/sim/slo_search.hpp"

#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/sim/synthetic.hpp"
#include "md1_engine.hpp"

using namespace kvplan;

namespace {

// Every step costs 10 ms whatever it holds.
const StepPricer flat = [](const std::vector<SeqWork>&) { return 0.01; };
const DecodePricer flat_decode = [](std::int64_t, std::int64_t) -> std::optional<double> { return 0.01; };

using test::md1_engine;

RateWorkload poisson(std::int64_t requests) {
    return rate_workload(synthetic_workload(test::md1_traffic(requests)));
}

}  // namespace

TEST_CASE("slo search: an M/D/1 queue's rate at which half the requests never wait, within 2% of (1 - goodput) / S") {
    // E2E target S + 1 us: a request meets it only if it does not wait at all.
    // By PASTA a Poisson arrival finds the server busy with probability
    // rho = rate x S, so the share that meets it is 1 - rho; at least goodput
    // g = 0.5 of them meet it while rho <= 1 - g, i.e. rate <= (1 - g) / S
    // = 0.5 / 0.1 s = 5 requests per second.
    const RateWorkload w = poisson(20000);
    const SearchEngine e = md1_engine();
    SearchTargets t;
    t.slo.e2e_s = 0.1 + 1e-6;
    t.goodput = 0.5;
    const SearchOutcome x = search_max_rate(w, e, t);
    REQUIRE(x.status == SearchOutcome::Status::Found);
    // The bound: one sequence, 10 output tokens of 10 ms each: 1 / (10 x 0.01 s) = 10 req/s.
    CHECK(x.bound_rps == Approx(10.0));
    CHECK(x.max_rate_rps == Approx(5.0).epsilon(0.02));
    CHECK(x.fail_rate_rps <= x.max_rate_rps * 1.01 + 1e-12);
    CHECK(x.binding == "e2e");

    SECTION("the rate found passes in the simulator, 1.1 times it fails") {
        const auto share = [&](double rate) { return attainment(simulate(at_rate(w, rate), e.vllm, e.price, e.decode), t.slo).all; };
        CHECK(share(x.max_rate_rps) >= 0.5);
        CHECK(share(1.1 * x.max_rate_rps) < 0.5);
    }
    SECTION("two threads give the same answers as one, in the same order") {
        SearchTargets tighter = t;
        tighter.goodput = 0.8;  // rate (1 - 0.8) / 0.1 s = 2 req/s
        const std::vector<SearchEngine> engines{e, e, e};
        const SearchAll one = search_all(w, engines, t, SearchSettings{}, 1), two = search_all(w, engines, t, SearchSettings{}, 2);
        for (std::size_t i = 0; i < engines.size(); ++i) {
            CHECK(one.outcomes[i].max_rate_rps == two.outcomes[i].max_rate_rps);
            CHECK(one.outcomes[i].simulations == two.outcomes[i].simulations);
        }
        CHECK(search_max_rate(w, e, tighter).max_rate_rps == Approx(2.0).epsilon(0.02));
    }
    SECTION("ranked by cost, a candidate whose cheapest fleet costs more than the best found is not searched") {
        // Target 4 req/s: at the 10 req/s bound each engine needs ceil(0.4) = 1
        // replica, costing 1, 1 and 3. Searched one at a time, the first finds
        // 5 req/s (1 replica, cost 1); the second could tie it and is searched;
        // the third cannot cost less than 3 and is pruned, on any thread count.
        const std::vector<SearchEngine> engines{e, e, e};
        const PruneBy prune{4.0, {1.0, 1.0, 3.0}, 1};
        SearchSettings one_by_one;
        one_by_one.wave = 1;
        for (unsigned threads : {1u, 2u}) {
            const SearchAll all = search_all(w, engines, t, one_by_one, threads, &prune);
            CHECK(all.outcomes[0].status == SearchOutcome::Status::Found);
            CHECK(all.outcomes[1].status == SearchOutcome::Status::Found);
            CHECK(all.outcomes[2].status == SearchOutcome::Status::Pruned);
            CHECK(all.outcomes[2].simulations == 0);
        }
    }
}

TEST_CASE("slo search: a search stops at the first failing rate its caller calls hopeless") {
    // The M/D/1 queue at goodput 0.8 sustains (1 - 0.8) / 0.1 s = 2 req/s.
    // The bracket: the 10 req/s bound fails, 5 and 2.5 fail, 1.25 passes;
    // bisection tries sqrt(1.25 x 2.5) = 1.77 (passes), then
    // sqrt(1.77 x 2.5) = 2.10, which fails, and is below the 2.2 req/s the
    // caller needs: the search stops there, after the lone request and 6 runs.
    const RateWorkload w = poisson(20000);
    SearchTargets t;
    t.slo.e2e_s = 0.1 + 1e-6;
    t.goodput = 0.8;
    std::vector<double> asked;
    const SearchOutcome x = search_max_rate(w, md1_engine(), t, SearchSettings{}, [&](double fail_rps) {
        asked.push_back(fail_rps);
        return fail_rps < 2.2;
    });
    CHECK(x.status == SearchOutcome::Status::Pruned);
    const double expected = std::sqrt(std::sqrt(1.25 * 2.5) * 2.5);
    CHECK(x.fail_rate_rps == Approx(expected));
    CHECK(x.simulations == 7);
    REQUIRE(asked.size() == 4);  // each failing rate, in order
    CHECK(asked[0] == Approx(10.0));
    CHECK(asked[1] == Approx(5.0));
    CHECK(asked[2] == Approx(2.5));
    CHECK(asked[3] == Approx(expected));
}

TEST_CASE("slo search: a request that misses its target alone drops the candidate without a search") {
    // Alone a request takes 10 steps of 10 ms: E2E 0.1 s > the 0.05 s target.
    SearchTargets t;
    t.slo.e2e_s = 0.05;
    const SearchOutcome x = search_max_rate(poisson(100), md1_engine(), t);
    CHECK(x.status == SearchOutcome::Status::SloAlone);
    CHECK(x.binding == "e2e");
    CHECK(x.alone_value_s == Approx(0.1));
    CHECK(x.simulations == 1);  // the lone request only
}

TEST_CASE("slo search: a workload that still meets its targets at 4 x the bound is a burst, not a rate") {
    // The M/D/1 engine serves one request each 0.1 s: the bound is 10 req/s.
    // Five requests arriving at once finish by 0.5 s, so an E2E target of
    // 1 s holds at any rate: at 10, 20 and 40 req/s (4 x the bound) the run
    // passes, and the search stops there instead of doubling on for ever.
    SearchTargets t;
    t.slo.e2e_s = 1.0;
    const SearchOutcome x = search_max_rate(poisson(5), md1_engine(), t);
    CHECK(x.bound_rps == Approx(10.0));
    CHECK(x.status == SearchOutcome::Status::Burst);
    CHECK(x.max_rate_rps == Approx(40.0));
    CHECK(x.simulations == 1 + 3);  // the lone request, then 10, 20 and 40 req/s
    // A hundred requests at 40 req/s queue for 100 x 0.1 - 100 / 40 = 7.5 s: a rate is found below the bound.
    const SearchOutcome y = search_max_rate(poisson(100), md1_engine(), t);
    CHECK(y.status == SearchOutcome::Status::Found);
    CHECK(y.max_rate_rps < 10.0);
}

TEST_CASE("slo search: rescaled arrivals keep the requests and their order, and the peak minute counts a sliding window") {
    Workload w;
    for (double a : {0.0, 10.0, 20.0, 30.0, 65.0, 70.0, 75.0}) w.requests.push_back(SimRequest{a, 10, 10, {}, 0});
    const RateWorkload r = rate_workload(w);
    CHECK(r.base_rate_rps == Approx(6.0 / 75.0));  // 6 gaps over 75 s
    const Workload fast = at_rate(r, 0.8);         // ten times as fast
    CHECK(fast.requests[4].arrival_s == Approx(6.5));
    // [20 s, 80 s) holds 20, 30, 65, 70, 75: five requests in a minute.
    CHECK(peak_rate_rps(w, 60) == Approx(5.0 / 60.0));
    Workload one;
    one.requests.push_back(SimRequest{});
    CHECK_THROWS_AS(rate_workload(one), Error);
}

namespace {

// A disaggregated unit: `decode` instances as md1_engine() (10 ms steps, one
// sequence at a time) behind one prefill instance whose steps cost 1 us, over
// a link of 1 us and 10^15 bytes per second (a 100-token prompt of 1,000
// bytes per token moves in 1e-10 s).
SearchEngine md1_unit(std::int64_t decode) {
    const SearchEngine one = md1_engine();
    DisaggUnit u;
    u.prefill = one.vllm;
    u.prefill.max_num_seqs = 256;
    u.decode = one.vllm;
    u.pools.prefill_replicas = 1;
    u.pools.decode_replicas = decode;
    u.pools.link = KvLink{1e15, 1e-6};
    u.pools.kv_bytes_per_token_per_rank = 1000;
    u.prefill_pricing.step = [](const std::vector<SeqWork>&) { return 1e-6; };
    u.decode_pricing.step = flat;
    u.decode_pricing.decode = flat_decode;
    SearchEngine e;
    e.pd = std::move(u);
    return e;
}

}  // namespace

TEST_CASE("slo search: a disaggregated unit whose prefill and transfer take microseconds is its decode instance's M/D/1 queue") {
    // The decode instance recomputes the last prompt token (the step that
    // samples the first token) and runs 9 more decode steps: 10 steps of
    // 10 ms, S = 0.1 s, one request at a time, as md1_engine(). Prefill
    // (1 us a step) and the pull (1 us + 1e-10 s) add about 3 us, inside the
    // 1 ms of slack below, so a request meets E2E <= S + 1 ms when it does
    // not wait for the decode instance: the share 1 - rate x S of the M/D/1
    // queue, at least 0.5 up to 5 requests per second.
    const RateWorkload w = poisson(20000);
    SearchTargets t;
    t.slo.e2e_s = 0.1 + 1e-3;
    t.goodput = 0.5;
    const SearchOutcome x = search_max_rate(w, md1_unit(1), t);
    REQUIRE(x.status == SearchOutcome::Status::Found);
    CHECK(x.max_rate_rps == Approx(5.0).epsilon(0.02));
    CHECK(x.binding == "e2e");
}

TEST_CASE("slo search: a disaggregated unit's bound is the slower side's, by hand") {
    // 1,000-token prompts, 10 output tokens. The prefill instance's step
    // costs 10 ms + 0.1 ms per prompt token: the marginal price of a prompt
    // token is 0.1 ms, so a prompt takes at least 0.1 s and one prefill
    // instance serves at most 10 req/s. A decode instance serves 10 output
    // tokens of 10 ms at one sequence: 10 req/s; two of them 20.
    SyntheticSpec s;
    s.rate = 1;
    s.requests = 100;
    s.seed = 7;
    s.input.a = 1000;
    s.output.a = 10;
    const RateWorkload w = rate_workload(synthetic_workload(s));
    SearchEngine e = md1_unit(2);
    e.pd->prefill_pricing.step = [](const std::vector<SeqWork>& seqs) {
        double tokens = 0;
        for (const SeqWork& q : seqs) tokens += static_cast<double>(q.new_tokens);
        return 0.01 + 1e-4 * tokens;
    };
    CHECK(rate_upper_bound(w, e) == Approx(10.0));
    e.pd->pools.prefill_replicas = 3;  // 30 req/s of prefill: the two decode instances' 20 bind
    CHECK(rate_upper_bound(w, e) == Approx(20.0));
}

TEST_CASE("slo search: a pipeline of two 10 ms stages at one sequence is an M/D/1 queue of twice the step") {
    // vLLM's batch queue (VllmEngine with stages) keeps a request's next
    // batch back until its last one has left the last stage; with
    // max_num_seqs 1 nothing else runs meanwhile, so each of a request's 10
    // steps (the prompt, then 9 decodes) takes both stages, 20 ms: S = 0.2 s
    // and the share that never waits, 1 - rate x S, is at least 0.5 up to
    // 0.5 / 0.2 s = 2.5 requests per second.
    const RateWorkload w = poisson(20000);
    SearchEngine e = md1_engine();
    e.stages = {flat, flat};
    SearchTargets t;
    t.slo.e2e_s = 0.2 + 1e-6;
    t.goodput = 0.5;
    const SearchOutcome x = search_max_rate(w, e, t);
    REQUIRE(x.status == SearchOutcome::Status::Found);
    CHECK(x.max_rate_rps == Approx(2.5).epsilon(0.02));
    CHECK(x.binding == "e2e");
    // The bound: batches of ceil(1 / 2) = 1 sequence leave the slowest stage every 10 ms:
    // 10 output tokens x 10 ms = 0.1 s a request, 10 req/s, four times the answer.
    CHECK(x.bound_rps == Approx(10.0));
    const auto share = [&](double rate) { return attainment(simulate(at_rate(w, rate), e.vllm, e.price, e.decode, false, e.stages), t.slo).all; };
    CHECK(share(x.max_rate_rps) >= 0.5);
    CHECK(share(1.1 * x.max_rate_rps) < 0.5);
}

TEST_CASE("slo search: a pipeline's bound is its slowest stage's, for batches of max_num_seqs / P, by hand") {
    // 100-token prompts, 10 output tokens; max_num_seqs 8 over 2 stages:
    // batches of 4 (the pool's 16,000 tokens, 8,000 per batch, hold 72
    // requests of 110 tokens). Stage 1 costs 10 ms + 1 ms a sequence, stage 2
    // 12 ms + 1 ms: the slowest, 16 ms at 4 sequences, sends out 4 tokens, so
    // a request's 10 take 10 x 16 / 4 = 40 ms: 25 req/s. Neither stage's
    // price grows with prompt tokens: their marginal price is 0.
    SearchEngine e = md1_engine();
    e.vllm.max_num_seqs = 8;
    const auto stage = [](double fixed_s) {
        return StepPricer([fixed_s](const std::vector<SeqWork>& seqs) { return fixed_s + 1e-3 * static_cast<double>(seqs.size()); });
    };
    e.stages = {stage(0.010), stage(0.012)};
    CHECK(rate_upper_bound(poisson(100), e) == Approx(25.0));
    e.stages = {stage(0.012), stage(0.010), stage(0.010), stage(0.010)};  // batches of 2: 10 x 14 / 2 = 70 ms
    CHECK(rate_upper_bound(poisson(100), e) == Approx(1 / 0.07));
}

TEST_CASE("slo search: the goodput curve of an M/D/1 queue follows 1 - rate x S, its knee where that crosses the target") {
    // md1_engine serves one request at a time in S = 0.1 s. With the E2E
    // target S + 1 us a request is good only if it never waits, which by
    // PASTA happens with probability 1 - rate x S. Goodput target 0.525:
    // met while rate <= 0.475 / 0.1 s = 4.75 req/s. At a chosen rate of 4
    // the multiples 0.25 ... 2 are the rates 1, 1.5, ..., 8, so the knee is
    // 4.5 req/s (multiple 1.125, share 0.55; 5 req/s has 0.5). Below the
    // server's 1 / S = 10 req/s every request completes: throughput is the
    // offered rate, goodput the rate times its share.
    const RateWorkload w = poisson(10000);
    const SearchEngine e = md1_engine();
    SearchTargets t;
    t.slo.e2e_s = 0.1 + 1e-6;
    t.goodput = 0.525;
    const std::vector<double> m = goodput_multiples();
    REQUIRE(m.size() == 15);
    CHECK(m.front() == 0.25);
    CHECK(m[6] == 1.0);
    CHECK(m.back() == 2.0);
    const std::vector<GoodputCurve> curves = goodput_curves(w, {&e, &e}, {4.0, 8.0}, t, m, 2);
    REQUIRE(curves.size() == 2);
    const GoodputCurve& c = curves[0];
    REQUIRE(c.points.size() == 15);
    REQUIRE(c.knee.has_value());
    CHECK(c.points[*c.knee].multiple == 1.125);
    CHECK(c.points[*c.knee].offered_rps == Approx(4.5));
    for (const GoodputPoint& p : c.points) {
        INFO("offered " << p.offered_rps);
        CHECK(p.throughput_rps == Approx(p.offered_rps).epsilon(0.01));
        CHECK(p.goodput_share == Approx(1 - 0.1 * p.offered_rps).margin(0.03));
        CHECK(p.goodput_rps == Approx(p.throughput_rps * p.goodput_share).epsilon(0.01));
    }
    // Chosen 8: twice it is 16 req/s offered, past the server's 10; it completes 10 a second.
    CHECK(curves[1].points.back().offered_rps == Approx(16.0));
    CHECK(curves[1].points.back().throughput_rps == Approx(10.0).epsilon(0.02));
    // Threads change nothing.
    const std::vector<GoodputCurve> one = goodput_curves(w, {&e}, {4.0}, t, m, 1);
    for (std::size_t i = 0; i < m.size(); ++i) CHECK(one[0].points[i].goodput_share == c.points[i].goodput_share);
}

TEST_CASE("slo search: with K drafts a step the bound allows K + 1 tokens a verify step, still above what the search finds") {
    // md1_engine: a request's 10 output tokens take 10 steps of 10 ms at one
    // sequence, the prefill's marginal price 0 (a flat step): 10 req/s. With
    // K = 3 drafts at most 4 tokens come out of a verify step, which costs
    // at least a plain step: the floor is 0.1 s / 4, so the bound is 40 req/s.
    SearchEngine e = md1_engine();
    CHECK(rate_upper_bound(poisson(100), e) == Approx(10.0));
    e.vllm.spec.k = 3;
    e.vllm.spec.rates = {1.0, 1.0, 1.0};
    e.vllm.spec.seed = 1;
    CHECK(rate_upper_bound(poisson(100), e) == Approx(40.0));
    // Every draft kept: 1 prefill step (token 1), then 3 verify steps of 4
    // tokens give 12 >= 9 more: the search's answer stays below the bound.
    SearchTargets t;
    t.slo.e2e_s = 1.0;
    const SearchOutcome x = search_max_rate(poisson(200), e, t);
    REQUIRE(x.status == SearchOutcome::Status::Found);
    CHECK(x.max_rate_rps <= x.bound_rps);
    CHECK(x.max_rate_rps > 10.0);  // faster than the plain engine's ceiling
}
