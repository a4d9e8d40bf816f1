// `kvplan measure --device cpu`: a smoke run on a tiny shape (seconds), its
// JSON, the calibration file round-trip through `kvplan roofline`, and the
// models it refuses.
#include <catch2/catch.hpp>

#include <algorithm>
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
    CHECK(j["schema_version"] == 2);
    CHECK_THAT(j["device"].get<std::string>(), Catch::StartsWith("cpu: "));
    CHECK(j["measured_bandwidth_bytes_per_s"].get<double>() > 1e8);
    CHECK(j["step_overhead_s"].is_null());  // the engine profile's per-step cost stays (roofline.md, "Calibration files")
    CHECK(j["measured_flop_per_s"].get<double>() > 1e7);
    CHECK(j["repeats"] == 1);
    CHECK(j["stream"]["array_bytes"].is_number_integer());
    CHECK(j["stream"]["read"]["median_bytes_per_s"] == j["measured_bandwidth_bytes_per_s"]);
    CHECK(j["matrix_product"]["median_flop_per_s"] == j["measured_flop_per_s"]);
    CHECK(j["warnings"].is_array());
    REQUIRE(j["decode"].size() == 2);
    for (const auto& d : j["decode"]) {
        CHECK(d["context_tokens"] == 32);
        CHECK(d["predicted_s"].get<double>() > 0);
        CHECK(d["measured_s"].get<double>() > 0);
        CHECK(d["predicted_bytes"].is_number_integer());
        CHECK(d["predicted_flop"].is_number_integer());
        // One repeat: its range is that run, and nothing spreads.
        CHECK(d["min_s"] == d["measured_s"]);
        CHECK(d["max_s"] == d["measured_s"]);
        CHECK(d["spread_percent"] == 0.0);
    }
    REQUIRE(j["prefill"].size() == 1);
    CHECK(j["prefill"][0]["prompt_tokens"] == 8);
    CHECK(j["layers_total"] == 12);
    CHECK(j["layers_measured"] == 1);
}

// Every key names its unit and counts are integers (docs/measure.md), so a
// consumer never guesses: walk the whole file.
static void check_unit_keys(const nlohmann::json& j, const std::string& where) {
    static const std::vector<std::string> counts = {"schema_version", "threads", "layers_measured", "layers_total", "repeats", "batch"};
    static const std::vector<std::string> words = {"device", "model", "precision", "stream", "read", "copy", "triad", "matrix_product", "decode", "prefill", "warnings", "notes"};
    for (const auto& [key, value] : j.items()) {
        INFO(where + "." + key);
        if (value.is_object()) check_unit_keys(value, where + "." + key);
        if (value.is_array())
            for (const auto& x : value)
                if (x.is_object()) check_unit_keys(x, where + "." + key + "[]");
        const bool known = std::find(counts.begin(), counts.end(), key) != counts.end() || std::find(words.begin(), words.end(), key) != words.end();
        const bool unit = Catch::EndsWith("_bytes").match(key) || Catch::EndsWith("_s").match(key) || Catch::EndsWith("_tokens").match(key) ||
                          Catch::EndsWith("_flop").match(key) || Catch::EndsWith("_percent").match(key);
        CHECK((known || unit));
        if (Catch::EndsWith("_bytes").match(key) || Catch::EndsWith("_flop").match(key) || Catch::EndsWith("_tokens").match(key))
            CHECK(value.is_number_integer());
    }
}

TEST_CASE("measure's calibration JSON names a unit in every key and writes byte counts as integers") {
    std::vector<std::string> args = kTiny;
    *(std::find(args.begin(), args.end(), "--repeats") + 1) = "3";
    args.push_back("--json");
    auto r = kvplan_run(args);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    check_unit_keys(j, "");
    CHECK(j["repeats"] == 3);
    for (const auto& d : j["decode"]) {
        CHECK(d["min_s"].get<double>() <= d["measured_s"].get<double>());
        CHECK(d["measured_s"].get<double>() <= d["max_s"].get<double>());
        CHECK(d["spread_percent"].get<double>() ==
              Approx((d["max_s"].get<double>() - d["min_s"].get<double>()) / d["measured_s"].get<double>() * 100));
    }
    const auto& read = j["stream"]["read"];
    CHECK(read["min_bytes_per_s"].get<double>() <= read["median_bytes_per_s"].get<double>());
    CHECK(read["median_bytes_per_s"].get<double>() <= read["max_bytes_per_s"].get<double>());
}

TEST_CASE("measure's table shows each figure's range and spread over its repeats") {
    auto r = kvplan_run(kTiny);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("STREAM read") && Catch::Contains("matrix product") && Catch::Contains("spread"));
    CHECK_THAT(r.out, Catch::Contains("range"));
    CHECK_THAT(r.out, Catch::Contains("Each figure is the median of 1 timed runs"));
}

TEST_CASE("measure --help lists --layers once, as the layers it times") {
    auto r = kvplan_run({"measure", "--help"});
    REQUIRE(r.code == 0);
    const std::string options = r.out.substr(0, r.out.find("Examples:"));
    std::size_t count = 0;
    for (std::size_t at = options.find("--layers"); at != std::string::npos; at = options.find("--layers", at + 1)) ++count;
    CHECK(count == 1);
    // No hand-built shape: the benchmark builds a real model's layers.
    CHECK_THAT(options, !Catch::Contains("--kv-heads"));
    auto m = kvplan_run({"measure", "--layers", "1"});
    CHECK(m.code == 2);
    CHECK_THAT(m.err, Catch::Contains("measure needs --model"));
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
    CHECK(j["achievable_flops_per_s"].get<double>() == cal["measured_flop_per_s"].get<double>());
}

TEST_CASE("roofline --calibration still reads a schema 1 file, as measure wrote before unit-suffixed keys") {
    const std::string path = temp_path("kvplan_old_calibration");
    std::ofstream(path) << R"({"schema_version": 1, "device": "cpu: old", "measured_bandwidth_bytes_per_s": 1.5e10,
                              "measured_flops_per_s": 2.5e10, "step_overhead_s": 0.0, "stream": {"array_bytes": 268435456}})";
    auto r = kvplan_run({"roofline", "--model", "gpt2", "--gpu", "h100", "--batch", "1", "--context", "32", "--calibration", path, "--json"});
    std::remove(path.c_str());
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["achievable_bandwidth_bytes_per_s"] == 1.5e10);
    CHECK(j["achievable_flops_per_s"] == 2.5e10);
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
    CHECK(j["measured_flop_per_s"] == 6.0e14);
    CHECK(j["repeats"].is_null());                   // a saved run does not say
    CHECK(j["decode"][0]["min_s"].is_null());        // kvplan-gpu-bench reports medians only
    CHECK(j["decode"][0]["spread_percent"].is_null());
    REQUIRE(j["decode"].size() == 2);
    CHECK(j["decode"][0]["measured_s"] == 0.005);
    // Batch 1 is memory-bound: predicted = bytes / measured bandwidth (no fixed overhead under CUDA graphs).
    CHECK(j["decode"][0]["predicted_s"].get<double>() == Approx(j["decode"][0]["predicted_bytes"].get<double>() / 4.0e12));
    // The bytes: every layer's bf16 weights (Llama-3.1-8B without embedding and head: 6,979,588,096 parameters,
    // 13,959,176,192 B) plus 1,024 cached tokens x 131,072 B read and one token written.
    CHECK(j["decode"][0]["predicted_bytes"].is_number_integer());
    CHECK(j["decode"][0]["predicted_bytes"].get<double>() == Approx(13'959'176'192.0 + 1024.0 * 131'072 + 131'072).epsilon(1e-6));
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
