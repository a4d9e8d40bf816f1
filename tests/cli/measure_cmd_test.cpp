// `kvplan measure --device cpu`: a smoke run on a tiny shape (seconds), its
// JSON, the calibration file round-trip through `kvplan roofline`, and the
// models it refuses.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

const std::vector<std::string> kTiny = {"measure", "--device", "cpu", "--model", "gpt2", "--layers", "1", "--batch", "1,2", "--context", "32",
                                        "--prompt", "8", "--stream-size", "4MiB", "--repeats", "1", "--threads", "2"};

std::string temp_path(const char* name) {
    return (std::filesystem::temp_directory_path() / (std::string(name) + "_" + std::to_string(::getpid()) + ".json")).string();
}

}  // namespace

TEST_CASE("measure --device cpu: a tiny run reports measured beside predicted, in JSON") {
    std::vector<std::string> args = kTiny;
    args.push_back("--json");
    auto r = kvplan_run(args);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Catch::Contains("measure: STREAM bandwidth"));  // progress lines
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["schema_version"] == 1);
    CHECK_THAT(j["device"].get<std::string>(), Catch::StartsWith("cpu: "));
    CHECK(j["measured_bandwidth_bytes_per_s"].get<double>() > 1e8);
    CHECK(j["measured_flops_per_s"].get<double>() > 1e7);
    REQUIRE(j["decode"].size() == 2);
    for (const auto& d : j["decode"]) {
        CHECK(d["context_tokens"] == 32);
        CHECK(d["predicted_s"].get<double>() > 0);
        CHECK(d["measured_s"].get<double>() > 0);
    }
    REQUIRE(j["prefill"].size() == 1);
    CHECK(j["prefill"][0]["prompt_tokens"] == 8);
    CHECK(j["layers_total"] == 12);
    CHECK(j["layers_measured"] == 1);
}

TEST_CASE("measure --output writes a calibration file that roofline --calibration uses") {
    const std::string path = temp_path("kvplan_cpu_calibration");
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), {"--output", path});
    auto m = kvplan_run(args);
    REQUIRE(m.code == 0);
    CHECK_THAT(m.out, Catch::Contains("predicted") && Catch::Contains("measured"));
    std::ifstream in(path);
    const auto cal = nlohmann::json::parse(in);
    auto r = kvplan_run({"roofline", "--model", "gpt2", "--gpu", "h100", "--batch", "1", "--context", "32", "--calibration", path, "--json"});
    std::remove(path.c_str());
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["calibrated"] == true);
    CHECK(j["achievable_bandwidth_bytes_per_s"].get<double>() == cal["measured_bandwidth_bytes_per_s"].get<double>());
    CHECK(j["achievable_flops_per_s"].get<double>() == cal["measured_flops_per_s"].get<double>());
}

TEST_CASE("measure refuses models whose layers the CPU benchmark does not build") {
    for (const char* model : {"deepseek-v3", "mamba-2.8b"}) {
        INFO(model);
        auto r = kvplan_run({"measure", "--model", model, "--layers", "1"});
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains("does not build"));
    }
}

TEST_CASE("measure --output into a folder that does not exist fails cleanly and writes nothing") {
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), {"--output", "/nonexistent-kvplan-folder/cal.json"});
    auto r = kvplan_run(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("cannot write /nonexistent-kvplan-folder/cal.json"));
    CHECK_FALSE(std::filesystem::exists("/nonexistent-kvplan-folder/cal.json"));
}

TEST_CASE("measure --device cuda --from FILE reads a kvplan-gpu-bench result and predicts from its bandwidth") {
    auto r = kvplan_run({"measure", "--device", "cuda", "--model", "llama-3.1-8b", "--from",
                         std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/gpu/bench-output-format.json", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["device"] == "cuda: Synthetic GPU");
    CHECK(j["measured_bandwidth_bytes_per_s"] == 4.0e12);
    CHECK(j["measured_flops_per_s"] == 6.0e14);
    REQUIRE(j["decode"].size() == 2);
    CHECK(j["decode"][0]["measured_s"] == 0.005);
    // Batch 1 is memory-bound: predicted = bytes / measured bandwidth (no fixed overhead under CUDA graphs).
    CHECK(j["decode"][0]["predicted_s"].get<double>() == Approx(j["decode"][0]["bytes"].get<double>() / 4.0e12));
    // The bytes: every layer's bf16 weights (Llama-3.1-8B without embedding and head: 6,979,588,096 parameters,
    // 13,959,176,192 B) plus 1,024 cached tokens x 131,072 B read and one token written.
    CHECK(j["decode"][0]["bytes"].get<double>() == Approx(13'959'176'192.0 + 1024.0 * 131'072 + 131'072).epsilon(1e-6));
    CHECK(j["prefill"][0]["prompt_tokens"] == 512);
}

TEST_CASE("measure --device cuda without a GPU exits 69 with one line") {
    auto r = kvplan_run({"measure", "--device", "cuda", "--model", "llama-3.1-8b"});
    if (r.code == 0) SUCCEED("a GPU is present");  // the run measured for real
    else {
        CHECK(r.code == 69);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
}
