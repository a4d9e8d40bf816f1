// `kvplan measure --device cpu`: a smoke run on a tiny shape (seconds), its
// JSON, the calibration file round-trip through `kvplan roofline`, and the
// models it refuses.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "report/display_width.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

const std::vector<std::string> kTiny = {"measure", "--device", "cpu", "--model",       "gpt2", "--layers",  "1", "--batch",   "1,2", "--context",
                                        "32",      "--prompt", "8",   "--stream-size", "4MiB", "--repeats", "1", "--threads", "2"};

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
    static const std::vector<std::string> words = {"device",         "model",  "precision", "stream",   "read",  "copy",   "triad",
                                                   "matrix_product", "decode", "prefill",   "warnings", "notes", "engine", "engine_device"};
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
    CHECK(j["repeats"].is_null());             // a saved run does not say
    CHECK(j["decode"][0]["min_s"].is_null());  // kvplan-gpu-bench reports medians only
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

TEST_CASE("measure --engine: the speed profile's prediction on the database device beside each measured step") {
    // vLLM's profile on an H100 SXM (3.35 TB/s, 989 TFLOP/s bf16): weights
    // stream at 0.55 of the datasheet, the KV cache at 0.85, matrix products
    // at 0.65; no per-step cost (the timed kernels run no scheduler).
    // Decode, batch 1 at 1,024 tokens: 13,959,176,192 B of weights / (0.55 x
    // 3.35e12) + (1,024 + 1) x 131,072 B of KV / (0.85 x 3.35e12) = 7.6234 ms.
    // Prefill of 512 tokens: 2 x 512 x 6,979,588,096 FLOP of matrix products
    // plus causal attention, 4 x 4,096 x (512 x 513 / 2) x 32 layers =
    // 6.88e10 FLOP, over 0.65 x 989e12 FLOP/s = 11.224 ms.
    const std::string bench = std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/gpu/bench-output-format.json";
    const std::vector<std::string> args = {"measure", "--device", "cuda", "--model", "llama-3.1-8b", "--from",
                                           bench,     "--engine", "vllm", "--gpu",   "h100"};
    std::vector<std::string> json = args;
    json.push_back("--json");
    auto r = kvplan_run(json);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["engine"] == "vLLM");
    CHECK(j["engine_device"] == "NVIDIA H100 SXM 80GB");
    const double decode = 13'959'176'192.0 / (0.55 * 3.35e12) + 1025.0 * 131'072 / (0.85 * 3.35e12);
    CHECK(j["decode"][0]["engine_predicted_s"].get<double>() == Approx(decode).epsilon(1e-3));
    const double prefill = (2.0 * 512 * 6'979'588'096 + 4.0 * 4096 * (512 * 513 / 2) * 32) / (0.65 * 989e12);
    CHECK(j["prefill"][0]["engine_predicted_s"].get<double>() == Approx(prefill).epsilon(1e-3));
    // The calibration itself is unchanged: the measured rates, no per-step cost.
    CHECK(j["measured_bandwidth_bytes_per_s"] == 4.0e12);
    CHECK(j["step_overhead_s"].is_null());
    const auto table = kvplan_run(args);
    CHECK_THAT(table.out, Catch::Contains("profile = vLLM's speed profile on the NVIDIA H100 SXM 80GB"));
    CHECK(kvplan::widest_line(table.out) <= 100);
    // Without --engine the rows carry null; the device's name must be in the database, else --gpu is asked for.
    auto plain = kvplan_run({"measure", "--device", "cuda", "--model", "llama-3.1-8b", "--from", bench, "--json"});
    CHECK(nlohmann::json::parse(plain.out)["decode"][0]["engine_predicted_s"].is_null());
    auto unknown = kvplan_run({"measure", "--device", "cuda", "--model", "llama-3.1-8b", "--from", bench, "--engine", "vllm"});
    CHECK(unknown.code == 2);
    CHECK(unknown.out.empty());
    CHECK_THAT(unknown.err,
               Catch::Contains("the measured device \"Synthetic GPU\" is not in the database; name the one to predict for with --gpu ID"));
    auto cpu = kvplan_run({"measure", "--model", "gpt2", "--engine", "llamacpp"});
    CHECK(cpu.code == 2);
    CHECK_THAT(cpu.err, Catch::Contains("--engine: the speed profiles describe GPUs"));
    auto lone = kvplan_run({"measure", "--device", "cuda", "--model", "llama-3.1-8b", "--from", bench, "--gpu", "h100"});
    CHECK(lone.code == 2);
    CHECK_THAT(lone.err, Catch::Contains("--gpu names the device an engine profile predicts for; add --engine"));
    auto bogus = kvplan_run({"measure", "--device", "cuda", "--model", "llama-3.1-8b", "--from", bench, "--engine", "nope"});
    CHECK(bogus.code == 2);
    CHECK_THAT(bogus.err, Catch::Contains("--engine"));
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
