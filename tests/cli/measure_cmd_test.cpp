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
