// `kvplan roofline` and `kvplan recommend` in process, through run().
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

TEST_CASE("roofline --json carries the documented keys and one row per batch") {
    auto r = kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1,16,256", "--context", "4096", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    for (const char* key : {"gpu", "model", "achievable_bandwidth_bytes_per_s", "achievable_flops_per_s", "ttft_s", "rows"}) {
        INFO(key);
        CHECK(j.contains(key));
    }
    REQUIRE(j["rows"].size() == 3);
    for (const char* key : {"batch", "context_tokens", "decode_step_s", "tokens_per_s_per_user", "tokens_per_s_total", "bound", "kv_share", "fits"}) {
        INFO(key);
        CHECK(j["rows"][0].contains(key));
    }
    CHECK(j["rows"][0]["bound"] == "memory");
    CHECK(j["rows"][2]["fits"] == false);  // 256 sequences of 4,096 tokens exceed an H100's KV pool
    CHECK_FALSE(j.contains("price_per_hour_usd"));
    auto priced = nlohmann::json::parse(
        kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1", "--price-per-hour", "2.5", "--json"}).out);
    CHECK(priced["price_per_hour_usd"] == 2.5);
    CHECK(priced["rows"][0].contains("usd_per_million_tokens"));
}

TEST_CASE("roofline --engine llamacpp caches KV in f16, llama.cpp's --cache-type-k default, unless told otherwise") {
    auto kv_of = [](std::vector<std::string> args) {
        auto r = kvplan_run(args);
        REQUIRE(r.code == 0);
        return nlohmann::json::parse(r.out)["kv_dtype"].get<std::string>();
    };
    const std::vector<std::string> base{"roofline", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--batch", "1", "--json"};
    std::vector<std::string> llama = base, told = base;
    llama.insert(llama.end(), {"--engine", "llamacpp"});
    told.insert(told.end(), {"--engine", "llamacpp", "--kv-dtype", "bf16"});
    CHECK(kv_of(base) == "bf16");  // vLLM's rule: the checkpoint's bf16
    CHECK(kv_of(llama) == "fp16");
    CHECK(kv_of(told) == "bf16");
}

TEST_CASE("roofline says where the regime changes, in words") {
    auto r = kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("KV reads equal weight reads at batch"));
    CHECK_THAT(r.out, Catch::Contains("throughput ceiling"));
    CHECK_THAT(r.out, Catch::Contains("TTFT for a 2,048-token prompt"));
}

TEST_CASE("roofline --calibration uses measured figures and says so") {
    char path[] = "/tmp/kvplan_calibration_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(path) << R"({"schema_version": 1, "device": "test", "measured_bandwidth_bytes_per_s": 3.0e12, "measured_flops_per_s": 6.0e14})";
    auto r = kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1", "--calibration", path, "--json"});
    std::remove(path);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["calibrated"] == true);
    CHECK(j["achievable_bandwidth_bytes_per_s"] == 3.0e12);
    CHECK(j["achievable_flops_per_s"] == 6.0e14);
}

TEST_CASE("roofline --calibration keeps the engine's per-step cost unless the file gives one") {
    // measure writes "step_overhead_s": null (its kernels run no scheduler or sampler): the profile's
    // cost stays, 1.5 ms generic and 2.37 ms llama.cpp (models/engines/*.json). A number replaces it.
    auto overhead = [](const char* step, const char* engine) {
        char path[] = "/tmp/kvplan_calibration_XXXXXX";
        const int fd = mkstemp(path);
        REQUIRE(fd >= 0);
        close(fd);
        std::ofstream(path) << R"({"schema_version": 2, "measured_bandwidth_bytes_per_s": 3.0e12, "step_overhead_s": )" << step << "}";
        auto r =
            kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--batch", "1", "--engine", engine, "--calibration", path, "--json"});
        std::remove(path);
        REQUIRE(r.code == 0);
        return nlohmann::json::parse(r.out)["step_overhead_s"].get<double>();
    };
    CHECK(overhead("null", "generic") == Approx(0.0015).epsilon(1e-12));
    CHECK(overhead("null", "llamacpp") == Approx(0.00237).epsilon(1e-12));
    CHECK(overhead("0.0004", "llamacpp") == Approx(0.0004).epsilon(1e-12));
}

TEST_CASE("recommend --json lists candidates best first with vLLM flags") {
    auto r = kvplan_run({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--gpus",
                         "h100-sxm,l40s,a100-80gb", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["candidates"].size() > 0);
    for (const char* key : {"gpu", "tp", "batch", "ttft_s", "tpot_s", "tokens_per_s_per_gpu", "usd_per_million_tokens", "vllm_flags"}) {
        INFO(key);
        CHECK(j["candidates"][0].contains(key));
    }
    CHECK(j["candidates"][0]["usd_per_million_tokens"].is_null());
    CHECK_THAT(j["candidates"][0]["vllm_flags"].get<std::string>(), Catch::StartsWith("--tensor-parallel-size "));
}

TEST_CASE("recommend says plainly when nothing meets the targets") {
    auto r = kvplan_run({"recommend", "--model", "llama-3.1-70b", "--context", "32768", "--ttft", "0.05", "--tpot", "0.004"});
    REQUIRE(r.code == 1);  // nothing meets both targets: exit 1, report printed (docs/errors.md)
    CHECK_THAT(r.out, Catch::Contains("Nothing meets both targets") && Catch::Contains("bind"));
}

TEST_CASE("roofline csv rows name the model, GPU, TP and formats, so that runs concatenate") {
    auto r = kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "1,8", "--format", "csv"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("model,gpu,tp,weights,kv_dtype,batch,context_tokens,decode_step_s,"));
    CHECK(r.out.find("\nllama-3.1-8b,h100-sxm,1,bf16,bf16,1,") != std::string::npos);
    CHECK(r.out.find("\nllama-3.1-8b,h100-sxm,1,bf16,bf16,8,") != std::string::npos);
}

TEST_CASE("recommend exits 0 when a configuration meets both targets") {
    auto ok = kvplan_run({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05"});
    CHECK(ok.code == 0);
}

TEST_CASE("engines lists every profile and --show one with its provenance and --json the profiles and the latency table") {
    auto r = kvplan_run({"engines"});
    REQUIRE(r.code == 0);
    for (const char* id : {"generic", "vllm", "sglang", "trtllm", "llamacpp", "gpt-fast", "mlc", "exllamav2"}) CHECK_THAT(r.out, Catch::Contains(id));
    auto show = kvplan_run({"engines", "--show", "gpt-fast"});
    REQUIRE(show.code == 0);
    CHECK_THAT(show.out, Catch::Contains("weights_fraction.hbm") && Catch::Contains("fitted to 17 rows"));
    auto j = nlohmann::json::parse(kvplan_run({"engines", "--json"}).out);
    REQUIRE(j["engines"].size() == 8);
    CHECK(j["engines"][0]["id"] == "generic");
    CHECK(j["engines"][0]["step_overhead_s"] == 0.0015);
    CHECK(j["allreduce_latency"].size() == 12);
    CHECK(j["allreduce_latency"][0].contains("source"));
    auto bad = kvplan_run({"engines", "--show", "tgi"});
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::Contains("--show tgi: no such engine profile"));
}

TEST_CASE("engines --show ID --json writes the profile file models/engines/ID.json holds, and --engine-file reads it back unchanged") {
    char path[] = "/tmp/kvplan_engine_show_XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    for (const char* id : {"generic", "vllm", "sglang", "trtllm", "llamacpp", "gpt-fast", "mlc", "exllamav2"}) {
        INFO(id);
        auto written = kvplan_run({"engines", "--show", id, "--json"});
        REQUIRE(written.code == 0);
        // The same document as the bundled file (keys and values; numbers compare by value, 1 == 1.0).
        std::ifstream bundled(std::string(KVPLAN_SOURCE_DIR) + "/models/engines/" + id + ".json");
        CHECK(nlohmann::json::parse(written.out) == nlohmann::json::parse(bundled));
        std::ofstream(path, std::ios::trunc) << written.out;
        auto before = kvplan_run({"engines", "--show", id});
        auto after = kvplan_run({"--engine-file", path, "engines", "--show", id});
        REQUIRE(after.code == 0);
        CHECK(after.out == before.out);
        CHECK(kvplan_run({"--engine-file", path, "engines", "--show", id, "--json"}).out == written.out);
    }
    // The listing holds the same objects: every one with its schema_version, none with a null dtype.
    auto all = nlohmann::json::parse(kvplan_run({"engines", "--json"}).out);
    for (const auto& e : all["engines"]) {
        CHECK(e["schema_version"] == 1);
        CHECK((!e.contains("kv_cache_dtype") || e["kv_cache_dtype"].is_string()));
    }
    std::remove(path);
}

TEST_CASE("roofline --engine prices the step on that engine's profile and says which") {
    // gpt-fast on an A100 SXM: 0.751 x 2.039 TB/s for bf16 weights, against the generic 0.55.
    auto j = nlohmann::json::parse(
        kvplan_run({"roofline", "--model", "llama-2-7b", "--gpu", "a100-sxm-80gb", "--engine", "gpt-fast", "--batch", "1", "--json"}).out);
    CHECK(j["engine"] == "gpt-fast");
    CHECK(j["achievable_bandwidth_bytes_per_s"].get<double>() == Approx(0.751 * 2.039e12));
    auto g = nlohmann::json::parse(kvplan_run({"roofline", "--model", "llama-2-7b", "--gpu", "a100-sxm-80gb", "--batch", "1", "--json"}).out);
    CHECK(g["engine"] == "generic");
    CHECK(g["achievable_bandwidth_bytes_per_s"].get<double>() == Approx(0.55 * 2.039e12));
    auto text = kvplan_run({"roofline", "--model", "llama-2-7b", "--gpu", "a100-sxm-80gb", "--engine", "gpt-fast", "--batch", "1"});
    CHECK_THAT(text.out, Catch::Contains("(gpt-fast profile)"));
    auto bad = kvplan_run({"roofline", "--model", "llama-2-7b", "--gpu", "a100", "--engine", "tgi"});
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
}

TEST_CASE("engine files: --engine-file adds a team's own profile and replaces a bundled one by id and refuses a bad value naming the field") {
    char path[] = "/tmp/kvplan_engines_XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    // Our vLLM build: generic's fractions with a 0.8 ms step; and a replaced gpt-fast with a 0.5 HBM fraction.
    std::ofstream(path) << R"([{"schema_version": 1, "id": "ours", "step_overhead_s": 0.0008},
                               {"schema_version": 1, "id": "gpt-fast", "weights_fraction": {"hbm": 0.5}}])";
    auto listed = kvplan_run({"--engine-file", path, "engines"});
    REQUIRE(listed.code == 0);
    CHECK_THAT(listed.out, Catch::Contains("ours"));
    auto j = nlohmann::json::parse(kvplan_run({"--engine-file", path, "roofline", "--model", "llama-2-7b", "--gpu", "a100-sxm-80gb", "--engine",
                                               "ours", "--batch", "1", "--json"})
                                       .out);
    CHECK(j["step_overhead_s"] == 0.0008);
    auto g = nlohmann::json::parse(kvplan_run({"--engine-file", path, "roofline", "--model", "llama-2-7b", "--gpu", "a100-sxm-80gb", "--engine",
                                               "gpt-fast", "--batch", "1", "--json"})
                                       .out);
    CHECK(g["achievable_bandwidth_bytes_per_s"].get<double>() == Approx(0.5 * 2.039e12));
    std::ofstream(path) << R"({"schema_version": 1, "id": "ours", "kv_fraction": 3})";
    auto bad = kvplan_run({"--engine-file", path, "engines"});
    CHECK(bad.code == 65);
    CHECK(bad.out.empty());
    // The bounds table's row (core/bounds.hpp, docs/errors.md): an efficiency fraction is in [0.01, 1].
    CHECK_THAT(bad.err,
               Catch::Contains(std::string(path) + ": kv_fraction: expected efficiency fraction in [0.01, 1]") && Catch::Contains("found 3"));
    std::remove(path);
}
