// `kvplan simulate --pp` and SGLang's `--replicas` end to end (in process):
// the pool is the binding stage's, a lone request's times are its stages'
// roofline prices, and the flags that cannot combine are refused in one line.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "core/memory/parallel.hpp"
#include "core/speed/step_cost.hpp"
#include "io/engine_db.hpp"
#include "sim_cli_support.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

const std::string kTraces = std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/";

}  // namespace

TEST_CASE("simulate --pp 2: the binding stage's pool, and a lone request's TTFT and E2E from its two stages' prices") {
    // One request of 2,000 prompt tokens and 3 output tokens. By hand, from
    // the stage cost models (16 layers each): TTFT = stage 0's prefill
    // (with the step overhead and the send) + stage 1's; each later token
    // waits for both stages of a decode at its context.
    const std::string trace = write_temp("one.csv", "arrival_s,input_tokens,output_tokens\n0,2000,3\n");
    auto pool = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tp", "2", "--pp", "2", "--json"});
    REQUIRE(pool.code == 0);
    const std::int64_t blocks = nlohmann::json::parse(pool.out)["num_blocks"].get<std::int64_t>();
    auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tp", "2", "--pp", "2", "--trace", trace, "--json",
                         "--requests-csv", trace + ".out.csv"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["pipeline_stages"] == 2);
    CHECK(j["kv_blocks_total"] == blocks);
    CHECK(j["steps"] == 3);

    const ModelSpec m = preset("llama-3.1-8b");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h100-sxm");
    in.tp = 2;
    in.efficiency.profile = find_engine("--engine", "vllm");  // simulate prices steps on its engine's profile
    const std::vector<PipelineStage> st = pipeline_stages(32, 2);
    const CostModel s0 = make_stage_cost_model(in, st[0], 2), s1 = make_stage_cost_model(in, st[1], 2);
    const auto both = [&](std::int64_t cached, std::int64_t tokens) {
        return mixed_step(s0, {{cached, tokens}}).total_s + mixed_step(s1, {{cached, tokens}}).total_s;
    };
    const double ttft = both(0, 2000);
    CHECK(j["ttft_s"]["mean"].get<double>() == Approx(ttft).epsilon(1e-9));
    CHECK(j["e2e_s"]["mean"].get<double>() == Approx(ttft + both(2000, 1) + both(2001, 1)).epsilon(1e-9));

    // Without --pp the JSON has no pipeline_stages key (what it printed before).
    auto one = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace, "--json"});
    REQUIRE(one.code == 0);
    CHECK_FALSE(nlohmann::json::parse(one.out).contains("pipeline_stages"));
}

TEST_CASE("simulate --pp on a trace with replicas: every request completes, the table within 100 columns") {
    auto t = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--pp", "4", "--replicas", "2", "--trace",
                         kTraces + "azure_2023_conv.csv", "--limit", "400"});
    REQUIRE(t.code == 0);
    std::istringstream lines(t.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
    std::string flat = t.out;
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    CHECK(flat.find("4 pipeline stages") != std::string::npos);
    CHECK(flat.find("400 of 400") != std::string::npos);
    CHECK(flat.find("2 replicas, each a 4-stage pipeline on") != std::string::npos);
}

TEST_CASE("simulate refuses --pp beyond the layers, with SGLang, or on a device without an interconnect figure") {
    const std::string trace = kTraces + "azure_2023_code.csv";
    expect_usage_error({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--pp", "33", "--trace", trace}, "--pp 33");
    expect_usage_error({"simulate", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--pp", "2", "--trace", trace}, "--pp");
    const std::string cal = write_temp("cal.json", R"({"schema_version": 1, "device": "lab box", "measured_bandwidth_bytes_per_s": 2.0e12,
                                                      "measured_flops_per_s": 5.0e14})");
    expect_usage_error({"simulate", "--model", "llama-3.1-8b", "--gpu-mem", "80GiB", "--calibration", cal, "--pp", "2", "--trace", trace}, "--pp");
}

TEST_CASE("simulate --engine sglang --replicas 2 routes over two SGLang engines") {
    for (const char* router : {"round-robin", "least-loaded"}) {
        auto r = kvplan_run({"simulate", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace",
                             kTraces + "azure_2023_code.csv", "--limit", "300", "--replicas", "2", "--router", router, "--json"});
        REQUIRE(r.code == 0);
        const auto j = nlohmann::json::parse(r.out);
        CHECK(j["engine"] == "sglang");
        CHECK(j["completed"] == 300);
        CHECK(j["router"] == router);
        REQUIRE(j["replicas"].size() == 2);
        CHECK(j["replicas"][0]["requests"].get<std::int64_t>() + j["replicas"][1]["requests"].get<std::int64_t>() == 300);
    }
}
