// The hardware database (models/gpus.json): every device the issue lists,
// figures as the datasheets (shared/reference/gpus.md) and drivers report
// them, and the lookup rules.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/hardware.hpp"
#include "io/gpu_db.hpp"

using namespace kvplan;

TEST_CASE("the database holds every required device") {
    const char* ids[] = {"h100-sxm", "h100-pcie", "h100-nvl", "h200", "h20", "b200", "gb200", "a100-sxm-40gb", "a100-sxm-80gb",
                         "a100-pcie-80gb", "a10g", "a10", "l4", "l40s", "l40", "t4", "v100-sxm-32gb", "rtx-4090", "rtx-3090",
                         "rtx-3090-ti", "rtx-6000-ada", "rtx-a6000", "a40", "mi300x", "mi325x", "mi250x", "gaudi2", "gaudi3", "m1",
                         "m1-pro", "m1-max", "m2-max", "m2-ultra", "m3-max", "m4-max", "tpu-v5e", "tpu-v5p", "tpu-v6e"};
    for (const char* id : ids) {
        INFO(id);
        const Gpu& g = find_gpu(bundled_gpus(), id);
        CHECK(g.id == id);
        CHECK(g.memory_bytes > 0);
        CHECK(g.bandwidth_bytes_per_s > 0);
        CHECK_FALSE(g.memory_source.empty());
        CHECK_FALSE(g.bandwidth_source.empty());
        if (g.cuda_total_bytes) CHECK(*g.cuda_total_bytes < g.memory_bytes);
    }
}

TEST_CASE("an H100 80GB has 81,559 MiB as the driver reports it, 3.35 TB/s and 989 dense bf16 TFLOP/s") {
    const Gpu& g = find_gpu(bundled_gpus(), "h100-sxm");
    CHECK(g.memory_bytes == 81'559LL * 1'048'576);  // nvidia-smi, not 80 GB
    CHECK(g.bandwidth_bytes_per_s == 3'350'000'000'000);  // gpus.md: HBM3 3.35 TB/s
    CHECK(g.peak.bf16 == 989);                              // dense; 1,979 is the sparse headline
    CHECK(g.peak.fp8 == 1979);
    CHECK(g.interconnect_bytes_per_s == 450'000'000'000);   // NVLink 4: 900 GB/s bidirectional, 450 per direction
    // vLLM's total_gpu_memory on an H100: 79.18 GiB (llm-d), what engines multiply their fraction by.
    CHECK(g.engine_total_bytes() == 85'018'877'624);
}

TEST_CASE("datasheet figures match shared/reference/gpus.md") {
    auto g = [](const char* id) { return find_gpu(bundled_gpus(), id); };
    CHECK(g("h200").bandwidth_bytes_per_s == 4'800'000'000'000);
    CHECK(g("a100-sxm-80gb").bandwidth_bytes_per_s == 2'039'000'000'000);
    CHECK(g("a100-sxm-80gb").peak.bf16 == 312);
    CHECK_FALSE(g("a100-sxm-80gb").peak.fp8);  // Ampere has no fp8 path
    CHECK(g("b200").peak.fp4 == 9000);
    CHECK(g("l4").bandwidth_bytes_per_s == 300'000'000'000);
    CHECK(g("mi300x").bandwidth_bytes_per_s == 5'300'000'000'000);
    CHECK(g("rtx-4090").bandwidth_bytes_per_s == 1'008'000'000'000);
    CHECK(g("l40s").memory_bytes == 46'068LL * 1'048'576);  // gpus.md: 46068 MiB usable (nvidia-smi)
    CHECK(g("m4-max").unified_memory);
}

TEST_CASE("lookups ignore case, spaces and underscores and accept aliases") {
    const auto& db = bundled_gpus();
    CHECK(find_gpu(db, "H100").id == "h100-sxm");
    CHECK(find_gpu(db, "h100-80gb").id == "h100-sxm");
    CHECK(find_gpu(db, "H100_SXM").id == "h100-sxm");
    CHECK(find_gpu(db, "NVIDIA H100 SXM 80GB").id == "h100-sxm");
    CHECK(find_gpu(db, "A100-80GB").id == "a100-sxm-80gb");
}

TEST_CASE("an unknown device is a usage error that suggests close ids") {
    try {
        find_gpu(bundled_gpus(), "h1000");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Usage);
        CHECK_THAT(e.what(), Catch::Contains("h1000") && Catch::Contains("kvplan gpus") && Catch::Contains("h100"));
    }
}

TEST_CASE("a malformed database is rejected with the field named") {
    auto parse = [](const char* text) { return parse_gpu_database(nlohmann::json::parse(text), "gpus.json"); };
    const char* ok = R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 100, "memory_bandwidth_bytes_per_s": 5}]})";
    CHECK(parse(ok).size() == 1);
    CHECK_THROWS_WITH(parse(R"({"schema_version": 2, "gpus": []})"), Catch::Contains("schema_version"));
    CHECK_THROWS_WITH(parse(R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bandwidth_bytes_per_s": 5}]})"),
                      Catch::Contains("gpus[0].memory_bytes"));
    CHECK_THROWS_WITH(parse(R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 100, "memory_bandwidth_bytes_per_s": 5},
                                                               {"id": "y", "aliases": ["X"], "memory_bytes": 100, "memory_bandwidth_bytes_per_s": 5}]})"),
                      Catch::Contains("aliases"));
    CHECK_THROWS_WITH(parse(R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 100, "cuda_total_bytes": 200,
                                                               "memory_bandwidth_bytes_per_s": 5}]})"),
                      Catch::Contains("cuda_total_bytes"));
}
