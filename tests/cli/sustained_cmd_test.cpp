// The rate `recommend --slo` reports holds for far longer than the search
// ran it: the acceptance test of the long runs (docs/recommend.md, "A rate
// that holds"), through the real binary.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "binary_run.hpp"

using kvplan::test::Run;

namespace {

// `simulate` of the candidate's engine settings at `rate` for `requests`
// requests of seed `seed`: the share of requests meeting every SLO.
double attainment_at(const nlohmann::json& c, double rate, std::int64_t requests, int seed) {
    const Run r = Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", fmt::format("{:.6f}", rate), "--requests",
                               std::to_string(requests), "--input-len", "fixed:1000", "--output-len", "fixed:200", "--seed", std::to_string(seed),
                               "--max-num-seqs", std::to_string(c["max_num_seqs"].get<std::int64_t>()), "--max-num-batched-tokens",
                               std::to_string(c["max_num_batched_tokens"].get<std::int64_t>()), "--slo", "ttft=2s,tpot=60ms", "--json"});
    INFO(r.command << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out)["slo_attainment"].get<double>();
}

}  // namespace

TEST_CASE("recommend --slo: the rate found holds at 10 x the run length on five fresh seeds, and 1.1 x it does not", "[slow]") {
    // The example of the issue that asked for the long runs: Llama-3.1-8B on
    // one H100, 1,000-token prompts and 200-token outputs, TTFT 2 s and
    // TPOT 60 ms for 99% of requests. The short search alone said 30.19
    // req/s per replica, where runs of 20,000 requests served 26.4-28.1.
    const Run r = Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=60ms", "--rate", "40", "--input-len", "fixed:1000",
                               "--output-len", "fixed:200", "--gpus", "h100-sxm", "--max-gpus", "1", "--top", "1", "--json"});
    INFO(r.command << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json c = nlohmann::json::parse(r.out)["candidates"].at(0);
    const double rate = c["max_rate_per_replica_rps"].get<double>();
    const std::int64_t run = c["sustained"]["requests_per_run"].get<std::int64_t>();
    CHECK(rate < 30.19);
    CHECK(rate <= c["sustained"]["congested_throughput_rps"].get<double>());
    // At least 10 minutes of arrivals per run.
    CHECK(c["sustained"]["run_s"].get<double>() >= 599.0);
    // Ten times the run, five seeds the search never drew (it drew 0, 1, 2).
    int fail_above = 0;
    for (int seed : {101, 102, 103, 104, 105}) {
        CHECK(attainment_at(c, rate, 10 * run, seed) >= 0.99);
        fail_above += attainment_at(c, 1.1 * rate, 10 * run, seed) < 0.99;
    }
    // 1.1 x the rate fails on some seed, so the highest rate that holds on
    // every seed is below it: the answer is within 10% of it.
    CHECK(fail_above > 0);
}

TEST_CASE("recommend --slo --trace FILE --rate R: the trace's traffic at R req/s is the target, its fleet ceil(R / rate) replicas") {
    // The Azure conversation trace peaks at 8.70 req/s in its busiest
    // minute; asked for at 20 req/s, the target is 20 (not the peak), and
    // the trace's requests are replayed with arrivals stretched to that mean.
    const Run r = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--trace", "azure-2023-conv",
                               "--rate", "20", "--gpus", "h100-sxm", "--max-gpus", "1", "--json"});
    INFO(r.command << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["target_rate_rps"].get<double>() == 20.0);
    CHECK(j["target_source"] == "--rate");
    CHECK_THAT(j["workload"].get<std::string>(), Catch::Contains("rescaled to a mean of 20 req/s"));
    const nlohmann::json& c = j["candidates"].at(0);
    const double rate = c["sized_on_rate_rps"].get<double>();
    CHECK(c["replicas"].get<std::int64_t>() == static_cast<std::int64_t>(std::ceil(20.0 / rate)));
}

TEST_CASE("recommend --slo: a 70B TP layout's rate is within 3% of one that holds at 3 x the run length on three fresh seeds, 1.1 x it is not",
          "[slow]") {
    // The same check, shorter, for Llama-3.1-70B on H100s (TP up to 4):
    // 1,000-token prompts, 200-token outputs, TTFT 2 s and TPOT 60 ms. This
    // layout is TPOT-bound at the edge of its goodput, where misses come in
    // rare bursts: at the rate found (7.96 req/s), runs of 60,000 requests
    // meet the SLOs for 98.8-99.1% of requests, at 7.75 for 99.5-99.7%
    // (docs/recommend.md, "Known gaps"). So the check is that 0.97 x the
    // answer holds on every fresh seed: the answer is at most 3% high.
    const Run r = Run::kvplan({"recommend", "--model", "llama-3.1-70b", "--slo", "ttft=2s,tpot=60ms", "--rate", "10", "--input-len", "fixed:1000",
                               "--output-len", "fixed:200", "--gpus", "h100-sxm", "--max-gpus", "4", "--top", "1", "--json"});
    INFO(r.command << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json c = nlohmann::json::parse(r.out)["candidates"].at(0);
    REQUIRE(c["pp"] == 1);  // a plain TP replica, as simulate --tp replays it
    REQUIRE(c["attention_dp"] == 1);
    const double rate = c["max_rate_per_replica_rps"].get<double>();
    const std::int64_t run = c["sustained"]["requests_per_run"].get<std::int64_t>();
    const auto share = [&](double at, int seed) {
        const Run s = Run::kvplan({"simulate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", std::to_string(c["tp"].get<int>()), "--rate",
                                   fmt::format("{:.6f}", at), "--requests", std::to_string(3 * run), "--input-len", "fixed:1000", "--output-len",
                                   "fixed:200", "--seed", std::to_string(seed), "--max-num-seqs",
                                   std::to_string(c["max_num_seqs"].get<std::int64_t>()), "--max-num-batched-tokens",
                                   std::to_string(c["max_num_batched_tokens"].get<std::int64_t>()), "--slo", "ttft=2s,tpot=60ms", "--json"});
        INFO(s.command << "\n" << s.err);
        REQUIRE(s.exit_code == 0);
        return nlohmann::json::parse(s.out)["slo_attainment"].get<double>();
    };
    int fail_above = 0;
    for (int seed : {201, 202, 203}) {
        CHECK(share(0.97 * rate, seed) >= 0.99);
        fail_above += share(1.1 * rate, seed) < 0.99;
    }
    CHECK(fail_above > 0);
}
