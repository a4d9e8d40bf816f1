// The hardware database (models/gpus.json): every device the issue lists,
// figures as the datasheets (shared/reference/gpus.md) and drivers report
// them, and the lookup rules.
#include "core/hardware.hpp"

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "io/gpu_db.hpp"

using namespace kvplan;

TEST_CASE("the database holds every required device") {
    const char* ids[] = {"h100-sxm", "h100-pcie", "h100-nvl", "h200", "h20", "b200", "gb200", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb",
                         "a10g", "a10", "l4", "l40s", "l40", "t4", "v100-sxm-32gb", "rtx-4090", "rtx-3090", "rtx-3090-ti", "rtx-6000-ada",
                         "rtx-a6000", "a40", "mi300x", "mi325x", "mi250x", "gaudi2", "gaudi3", "m1", "m1-pro", "m1-max", "m2-max", "m2-ultra",
                         "m3-max", "m4-max", "tpu-v5e", "tpu-v5p", "tpu-v6e",
                         // the 15 later records; their sources are in models/GPUS_SOURCES.md
                         "h800", "gh200", "gh200-144gb", "b300", "gb300", "l20", "rtx-5090", "rtx-5080", "rtx-4080", "rtx-pro-6000",
                         "rtx-pro-6000-server", "mi355x", "mi350x", "m3-ultra", "m4-pro"};
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
    CHECK(g.memory_bytes == 81'559LL * 1'048'576);        // nvidia-smi, not 80 GB
    CHECK(g.bandwidth_bytes_per_s == 3'350'000'000'000);  // gpus.md: HBM3 3.35 TB/s
    CHECK(g.peak.bf16 == 989);                            // dense; 1,979 is the sparse headline
    CHECK(g.peak.fp8 == 1979);
    CHECK(g.interconnect_bytes_per_s == 450'000'000'000);  // NVLink 4: 900 GB/s bidirectional, 450 per direction
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

TEST_CASE("a device is found by the name nvidia-smi prints") {
    // `nvidia-smi --query-gpu=name --format=csv,noheader` on each device, as
    // quoted in public issue trackers and cloud documentation.
    const auto& db = bundled_gpus();
    CHECK(find_gpu(db, "NVIDIA H100 80GB HBM3").id == "h100-sxm");
    CHECK(find_gpu(db, "NVIDIA H100 PCIe").id == "h100-pcie");
    CHECK(find_gpu(db, "NVIDIA H100 NVL").id == "h100-nvl");
    CHECK(find_gpu(db, "NVIDIA GeForce RTX 4090").id == "rtx-4090");
    CHECK(find_gpu(db, "NVIDIA A100-SXM4-80GB").id == "a100-sxm-80gb");
    CHECK(find_gpu(db, "NVIDIA A100-SXM4-40GB").id == "a100-sxm-40gb");
    CHECK(find_gpu(db, "NVIDIA L40S").id == "l40s");
    CHECK(find_gpu(db, "NVIDIA A10G").id == "a10g");
    CHECK(find_gpu(db, "NVIDIA RTX A6000").id == "rtx-a6000");
    CHECK(find_gpu(db, "NVIDIA RTX 6000 Ada Generation").id == "rtx-6000-ada");
    CHECK(find_gpu(db, "Tesla T4").id == "t4");
    CHECK(find_gpu(db, "Tesla V100-SXM2-32GB").id == "v100-sxm-32gb");
    CHECK(find_gpu(db, "AMD Instinct MI300X").id == "mi300x");
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
    const char* ok = R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 100000000000, "memory_bandwidth_bytes_per_s": 3350000000000}]})";
    CHECK(parse(ok).size() == 1);
    CHECK_THROWS_WITH(parse(R"({"schema_version": 2, "gpus": []})"), Catch::Contains("schema_version"));
    CHECK_THROWS_WITH(parse(R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bandwidth_bytes_per_s": 3350000000000}]})"),
                      Catch::Contains("gpus[0].memory_bytes"));
    CHECK_THROWS_WITH(
        parse(R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 100000000000, "memory_bandwidth_bytes_per_s": 3350000000000},
                                                               {"id": "y", "aliases": ["X"], "memory_bytes": 100000000000, "memory_bandwidth_bytes_per_s": 3350000000000}]})"),
        Catch::Contains("aliases"));
    CHECK_THROWS_WITH(parse(R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 100000000000, "cuda_total_bytes": 200000000000,
                                                               "memory_bandwidth_bytes_per_s": 3350000000000}]})"),
                      Catch::Contains("cuda_total_bytes"));
}

TEST_CASE("the newer devices carry their datasheet and driver figures") {
    auto g = [](const char* id) { return find_gpu(bundled_gpus(), id); };
    // RTX 5090: 1,792 GB/s of 32 GB GDDR7 (TOMS_5090 'VRAM: 32GB, 28Gb/s, 512 bits ... Bandwidth: 1,792GB/s');
    // nvidia-smi '32607MiB' (AIC_5090 rtx_5090.yaml 'mem_capacity: 34190917632 # 32607 MiB reported by nvidia-smi').
    CHECK(g("rtx-5090").bandwidth_bytes_per_s == 1'792'000'000'000);
    CHECK(g("rtx-5090").memory_bytes == 32'607LL * 1'048'576);
    CHECK(g("rtx-5090").memory_bytes == 34'190'917'632);
    CHECK(g("rtx-5090").memory_technology == "GDDR7");
    // GeForce: the FP32-accumulate rate, half of the dense FP16-accumulate 419 (838 sparse / 2).
    CHECK(*g("rtx-5090").peak.bf16 == Approx(838.0 / 2 / 2));
    // MI355X: 288 GB HBM3E at 8 TB/s (AIWIKI_MI355X); rocm-smi 'VRAM Total Memory (B)' 309220868096.
    CHECK(g("mi355x").bandwidth_bytes_per_s == 8'000'000'000'000);
    CHECK(g("mi355x").memory_bytes == 309'220'868'096);
    CHECK(g("mi355x").memory_technology == "HBM3e");
    // FP8: 8,192 FLOPs per clock per CU (ISSCC_MI355X) x 256 CUs x 2.4 GHz = 5,033.2 TFLOP/s dense.
    CHECK(*g("mi355x").peak.fp8 == Approx(8192.0 * 256 * 2.4e9 / 1e12).epsilon(1e-4));
    // B300: nvidia-smi 'NVIDIA B300 SXM6 AC ... 0MiB / 275040MiB' = 288,400,343,040 B (AIC b300_sxm.yaml
    // 'mem_capacity: 288400343040 # 275040MiB'); dense bf16 2,250 = HGX B300 36 PFLOPS sparse / 2 / 8 (COSMOS_PR).
    CHECK(g("b300").memory_bytes == 275'040LL * 1'048'576);
    CHECK(g("b300").memory_bytes == 288'400'343'040);
    CHECK(g("b300").peak.bf16 == 36'000.0 / 2 / 8);
    // GB300: nvidia-smi 'NVIDIA GB300 ... 284208MiB'; 8 TB/s (VERDA); NVLink 5 900 GB/s per direction.
    CHECK(g("gb300").memory_bytes == 284'208LL * 1'048'576);
    CHECK(g("gb300").interconnect_bytes_per_s == 900'000'000'000);
    // H800: the H100 SXM's 81,559 MiB and 989 bf16, NVLink cut to 400 GB/s bidirectional = 200 per direction (AIC_H800).
    CHECK(g("h800").memory_bytes == g("h100-sxm").memory_bytes);
    CHECK(g("h800").interconnect_bytes_per_s == 200'000'000'000);
    // GH200 96 GB: nvidia-smi 'NVIDIA GH200 480GB ... 97871MiB', the H20's figure; 4.0 TB/s HBM3 (STAS2).
    CHECK(g("gh200").memory_bytes == g("h20").memory_bytes);
    CHECK(g("gh200").bandwidth_bytes_per_s == 4'000'000'000'000);
    // GH200 144 GB: nvidia-smi '0, NVIDIA GH200 144G HBM3e, 580.173.02, 146831 MiB, 9.0'.
    CHECK(g("gh200-144gb").memory_bytes == 146'831LL * 1'048'576);
    // RTX 5090: 'VRAM: 32,607 MiB (31.36 GiB reported by PyTorch)', stored as round(31.36 x 2^30).
    CHECK(g("rtx-5090").engine_total_bytes() == 33'672'543'601);
    // RTX PRO 6000 Blackwell: nvidia-smi 97887 MiB on both editions; 125 TFLOPS FP32 and 4,000 FP4 AI TOPS sparse.
    CHECK(g("rtx-pro-6000").memory_bytes == 97'887LL * 1'048'576);
    CHECK(g("rtx-pro-6000-server").memory_bytes == g("rtx-pro-6000").memory_bytes);
    CHECK(g("rtx-pro-6000").peak.fp4 == 4000.0 / 2);
    // RTX PRO Blackwell whitepaper Table 4: Workstation dense BF16 (FP32 accumulate) 503.8 at 1,792 GB/s;
    // Server Edition datasheet (December 2025): 1,597 GB/s and 120 FP32 TFLOPS (HWNOTE in GPUS_SOURCES.md).
    CHECK(g("rtx-pro-6000").peak.bf16 == 503.8);
    CHECK(g("rtx-pro-6000").bandwidth_bytes_per_s == 1'792'000'000'000);
    CHECK(g("rtx-pro-6000-server").bandwidth_bytes_per_s == 1'597'000'000'000);
    CHECK(g("rtx-pro-6000-server").peak.fp32 == 120);
    // H20: 'INT8 | FP8 Tensor Core 296 | 296', dense (CNSPEC), now no datasheet figure of it is unverified;
    // only its host link (no H20 document names the PCIe generation) is.
    CHECK(g("h20").peak.fp8 == 296);
    CHECK(g("h20").unverified == std::vector<std::string>{"host_link", "host_link_bytes_per_s_per_direction"});
    // Apple: M3 Ultra 819 GB/s with up to 512 GB (TPU_M3U), M4 Pro 273 GB/s with up to 64 GB (MACRUMORS_M4P).
    CHECK(g("m3-ultra").bandwidth_bytes_per_s == 819'000'000'000);
    CHECK(g("m3-ultra").unified_memory);
    CHECK(g("m4-pro").bandwidth_bytes_per_s == 273'000'000'000);
    CHECK(g("m4-pro").memory_bytes == 64LL << 30);
    CHECK(find_gpu(bundled_gpus(), "RTX5090").id == "rtx-5090");
}

TEST_CASE("the host link to CPU memory is what each device's cited source gives, per direction") {
    auto g = [](const char* id) { return find_gpu(bundled_gpus(), id); };
    // PCIe x16 per direction, theoretical, as interconnect_bytes_per_s_per_direction uses it (GPUS_SOURCES.md):
    // Gen3 8 GT/s x 16 lanes x 128/130 = 15.75 GB/s ~ 16; Gen4 twice that, 32; Gen5 twice again, 64.
    // H100 SXM: 'PCIe Gen5 | 128 GB/s | Host CPU-to-GPU data movement' (bidirectional) = 64 GB/s per direction.
    CHECK(g("h100-sxm").host_link == "PCIe Gen5 x16");
    CHECK(g("h100-sxm").host_link_bytes_per_s == 64'000'000'000);
    CHECK(g("h100-sxm").host_link_bytes_per_s == 128'000'000'000 / 2);
    // GH200: NVLink-C2C 'up to 900 GB/s of bidirectional bandwidth between GPU and CPU' (NVIDIA GH200 datasheet) = 450 per direction,
    // seven times the H100's PCIe Gen5 link.
    CHECK(g("gh200").host_link == "NVLink-C2C");
    CHECK(g("gh200").host_link_bytes_per_s == 900'000'000'000 / 2);
    CHECK(g("gh200").host_link_bytes_per_s == 450'000'000'000);
    // RTX 4090: GPUSPECS 'Interconnect Type ... RTX4090 | PCIe Gen4' = 32 GB/s per direction.
    CHECK(g("rtx-4090").host_link == "PCIe Gen4 x16");
    CHECK(g("rtx-4090").host_link_bytes_per_s == 32'000'000'000);
    // T4: SYS_T4 'PCIe 3.0 x16' = 16 GB/s per direction.
    CHECK(g("t4").host_link_bytes_per_s == 16'000'000'000);
    // Gaudi 3: Intel's Hot Chips 2024 slides 'Host Interface | PCIe Gen5 x16', 'Host Interface Peak BW | 128 GB/s bidirectional'.
    CHECK(g("gaudi3").host_link_bytes_per_s == 128'000'000'000 / 2);
    // M2 Ultra: the GPU shares the SoC's memory with the CPU; there is no separate link to offload over, so 0.
    CHECK(g("m2-ultra").host_link == "unified memory");
    CHECK(g("m2-ultra").host_link_bytes_per_s == 0);
    CHECK(g("m2-ultra").unified_memory);
    // Every record names its host link and where the figure comes from; only Apple's is 0.
    for (const Gpu& d : bundled_gpus()) {
        INFO(d.id);
        CHECK_FALSE(d.host_link.empty());
        CHECK_FALSE(d.host_link_source.empty());
        CHECK((d.host_link_bytes_per_s > 0) != d.unified_memory);
    }
}

TEST_CASE("a device without a host link leaves it unknown and a bad host-link figure names the field") {
    auto parse = [](const std::string& text) { return parse_gpu_database(nlohmann::json::parse(text), "our-gpus.json"); };
    const std::string head =
        R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 100000000000, "memory_bandwidth_bytes_per_s": 3350000000000)";
    const Gpu bare = parse(head + "}]}").at(0);
    CHECK(bare.host_link.empty());
    CHECK(bare.host_link_bytes_per_s == 0);
    const Gpu linked = parse(head + R"(, "host_link": "PCIe Gen4 x16", "host_link_bytes_per_s_per_direction": 32000000000}]})").at(0);
    CHECK(linked.host_link == "PCIe Gen4 x16");
    CHECK(linked.host_link_bytes_per_s == 32'000'000'000);
    for (const char* bad : {"-1", "3.5", "\"64 GB/s\""}) {
        INFO(bad);
        try {
            parse(head + R"(, "host_link_bytes_per_s_per_direction": )" + bad + "}]}");
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Data);
            CHECK_THAT(e.what(), Catch::Contains("our-gpus.json: gpus[0].host_link_bytes_per_s_per_direction"));
        }
    }
}
